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
    let mut out = String::with_capacity(output.len() + 16);
    push_quote_block(&mut out, output);
    out
}

/// [`quote_block`] appended to `out`.
fn push_quote_block(out: &mut String, output: &str) {
    if output.is_empty() {
        out.push_str(QUOTE);
        out.push_str("(no output)");
        return;
    }
    for (i, line) in output.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(QUOTE);
        push_one_line(out, line.strip_suffix('\r').unwrap_or(line));
    }
}

fn suppressed_line(out: &mut String, n: u64) {
    if n > 0 {
        use std::fmt::Write;
        let _ = write!(
            out,
            "\n({n} more matching output line{} suppressed by rate limits)",
            if n == 1 { " was" } else { "s were" }
        );
    }
}

/// The text of a process event (TEXT-1), built in one string: a
/// notification is made for every event, so its parts are written in
/// place rather than formatted one by one and joined.
pub fn render(e: &ProcessEvent) -> String {
    use std::fmt::Write;
    let quoted = match &e.kind {
        EventKind::WatchMatch { excerpt, .. } => excerpt.len(),
        EventKind::WatchDisabled { .. } => 0,
        EventKind::Completion { tail, .. } => tail.len(),
    };
    // The envelope and headers, every line's `| `, and room for a few
    // escapes: enough that the text is rarely grown or shrunk.
    let lines = match &e.kind {
        EventKind::WatchMatch { excerpt, .. } => excerpt.len() / 16,
        EventKind::Completion { tail, .. } => tail.len() / 16,
        EventKind::WatchDisabled { .. } => 0,
    };
    let mut out =
        String::with_capacity(200 + e.process_id.len() + e.command.len() + quoted + 2 * lines);
    out.push_str("[Background process ");
    push_one_line(&mut out, &e.process_id);
    match &e.kind {
        EventKind::WatchMatch {
            pattern,
            excerpt,
            suppressed,
        } => {
            out.push_str(" matched watch pattern \"");
            push_one_line(&mut out, pattern);
            out.push_str("\"]\nCommand: ");
            push_one_line(&mut out, &e.command);
            out.push_str("\nMatched output:\n");
            push_quote_block(&mut out, excerpt);
            suppressed_line(&mut out, *suppressed);
        }
        EventKind::WatchDisabled { suppressed } => {
            out.push_str(": watch patterns disabled after repeated rate limiting; you will get one notification when it exits]\nCommand: ");
            push_one_line(&mut out, &e.command);
            suppressed_line(&mut out, *suppressed);
        }
        EventKind::Completion {
            completion,
            tail,
            suppressed,
        } => {
            out.push(' ');
            match completion {
                Completion::Exited { code: 0 } => out.push_str("completed normally (exit code 0)"),
                Completion::Exited { code } => {
                    let _ = write!(out, "exited with code {code}");
                }
                Completion::Signaled { signal } => {
                    let _ = write!(out, "was terminated by signal {signal}");
                }
                Completion::Killed => out.push_str("was killed"),
                Completion::Lost => {
                    out.push_str("was lost: it was not running when the gateway restarted")
                }
                Completion::FailedToStart { reason } => {
                    out.push_str("failed to start: ");
                    push_one_line(&mut out, reason);
                }
            }
            out.push_str("]\nCommand: ");
            push_one_line(&mut out, &e.command);
            out.push_str("\nOutput:\n");
            push_quote_block(&mut out, tail);
            suppressed_line(&mut out, *suppressed);
        }
    }
    // A text queued for long keeps no more room than a few bytes.
    if out.capacity() - out.len() > 64 {
        out.shrink_to_fit();
    }
    out
}

/// The shutdown notice, one per thread (TEXT-3).
pub fn shutdown_notice() -> String {
    "[The gateway is shutting down. Background processes started here may be interrupted; you will be told what happened to them when it is back.]".to_owned()
}
