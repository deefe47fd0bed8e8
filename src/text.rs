//! Notification texts (spec TEXT-1..TEXT-4).
//!
//! A notification is an envelope line, header lines, and quoted output.
//! Every line of process output is prefixed with `| ` and has its control
//! and bidirectional-override characters made visible, so output can never
//! produce a line that looks like an envelope, a header or routing
//! metadata (TEXT-2). Values inside headers (command, pattern) are quoted on
//! one line the same way.

use crate::registry::{Completion, EventKind, ProcessEvent};

/// Quote prefix for every output line.
pub const QUOTE: &str = "| ";

/// Makes a single-line value safe: control characters, bidi overrides and
/// line/paragraph separators become `\u{XX}` escapes (TEXT-2).
pub fn one_line(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    push_one_line(&mut out, value);
    out
}

/// [`one_line`] appended to `out`, without a string of its own: a
/// notification quotes every line of its output through here.
fn push_one_line(out: &mut String, value: &str) {
    // Printable ASCII needs no escape, and is nearly all output: copy it
    // whole, and look at characters one by one only where it ends.
    let mut rest = value;
    while !rest.is_empty() {
        let plain = rest
            .bytes()
            .position(|b| !(b' '..=b'~').contains(&b))
            .unwrap_or(rest.len());
        out.push_str(&rest[..plain]);
        rest = &rest[plain..];
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            if needs_escape(c) {
                use std::fmt::Write;
                let _ = write!(out, "\\u{{{:X}}}", c as u32);
            } else {
                out.push(c);
            }
            rest = chars.as_str();
        }
    }
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
            | '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

/// Quotes multi-line output: one `| `-prefixed line per output line.
pub fn quote_block(output: &str) -> String {
    if output.is_empty() {
        return format!("{QUOTE}(no output)");
    }
    let mut out = String::with_capacity(output.len() + 16);
    for (i, line) in output.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(QUOTE);
        push_one_line(&mut out, line.strip_suffix('\r').unwrap_or(line));
    }
    out
}

fn suppressed_line(out: &mut String, n: u64) {
    if n > 0 {
        out.push_str(&format!(
            "\n({n} more matching output line{} suppressed by rate limits)",
            if n == 1 { " was" } else { "s were" }
        ));
    }
}

/// The text of a process event (TEXT-1).
pub fn render(e: &ProcessEvent) -> String {
    let id = one_line(&e.process_id);
    let cmd = one_line(&e.command);
    let mut out = match &e.kind {
        EventKind::WatchMatch {
            pattern,
            excerpt,
            suppressed,
        } => {
            let mut s = format!(
                "[Background process {id} matched watch pattern \"{}\"]\nCommand: {cmd}\nMatched output:\n{}",
                one_line(pattern),
                quote_block(excerpt)
            );
            suppressed_line(&mut s, *suppressed);
            s
        }
        EventKind::WatchDisabled { suppressed } => {
            let mut s = format!(
                "[Background process {id}: watch patterns disabled after repeated rate limiting; you will get one notification when it exits]\nCommand: {cmd}"
            );
            suppressed_line(&mut s, *suppressed);
            s
        }
        EventKind::Completion {
            completion,
            tail,
            suppressed,
        } => {
            let verb = match completion {
                Completion::Exited { code: 0 } => "completed normally (exit code 0)".to_owned(),
                Completion::Exited { code } => format!("exited with code {code}"),
                Completion::Signaled { signal } => format!("was terminated by signal {signal}"),
                Completion::Killed => "was killed".to_owned(),
                Completion::Lost => {
                    "was lost: it was not running when the gateway restarted".to_owned()
                }
                Completion::FailedToStart { reason } => {
                    format!("failed to start: {}", one_line(reason))
                }
            };
            let mut s = format!(
                "[Background process {id} {verb}]\nCommand: {cmd}\nOutput:\n{}",
                quote_block(tail)
            );
            suppressed_line(&mut s, *suppressed);
            s
        }
    };
    out.shrink_to_fit();
    out
}

/// The shutdown notice, one per thread (TEXT-3).
pub fn shutdown_notice() -> String {
    "[The gateway is shutting down. Background processes started here may be interrupted; you will be told what happened to them when it is back.]".to_owned()
}
