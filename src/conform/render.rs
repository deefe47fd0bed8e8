//! Rendering a trace and what an implementation did with it: a swimlane
//! timeline per thread, in text for the terminal and in SVG for a bug
//! report. A notification that landed away from its process's home is
//! marked (`!!` / red), with the home lane named.

use std::fmt::Write as _;

use super::trace::{Trace, TraceOp, TraceResult};
use crate::model::oracle::Place;

fn lane_of(trace: &Trace, d: &Place) -> Option<usize> {
    trace.threads.iter().position(|t| {
        t.platform == d.platform
            && t.chat_type == d.chat_type
            && t.chat_id == d.chat_id
            && t.thread_id == d.thread_id
    })
}

/// The first thread of the trace at the place (platform, chat type, chat,
/// thread) of thread `i`: where [`lane_of`] draws that place.
fn first_of_place(trace: &Trace, i: usize) -> usize {
    let Some(t) = trace.threads.get(i) else {
        return i;
    };
    trace
        .threads
        .iter()
        .position(|u| {
            u.platform == t.platform
                && u.chat_type == t.chat_type
                && u.chat_id == t.chat_id
                && u.thread_id == t.thread_id
        })
        .unwrap_or(i)
}

/// The thread of the latest spawn of `process` at or before `step` (a
/// notice of an earlier run delivered late is marked by the judge, whose
/// violations are printed with the timeline, not by this picture).
fn home_of(trace: &Trace, process: &str, step: usize) -> Option<usize> {
    trace
        .ops
        .iter()
        .take(step.saturating_add(1))
        .rev()
        .find_map(|o| match o {
            TraceOp::Spawn {
                thread, process: p, ..
            } if p == process => Some(*thread),
            _ => None,
        })
}

/// Which lane an operation happens in, if any.
fn op_lane(trace: &Trace, op: &TraceOp, step: usize) -> Option<usize> {
    match op {
        TraceOp::Message { thread }
        | TraceOp::TurnStart { thread }
        | TraceOp::TurnEnd { thread }
        | TraceOp::Reset { thread }
        | TraceOp::Spawn { thread, .. } => Some(*thread),
        TraceOp::Read { thread, .. } => Some(*thread),
        TraceOp::Output { process, .. }
        | TraceOp::Exit { process, .. }
        | TraceOp::Kill { process } => home_of(trace, process, step),
        _ => None,
    }
}

fn short(op: &TraceOp) -> String {
    match op {
        TraceOp::Message { .. } => "message".into(),
        TraceOp::TurnStart { .. } => "turn start".into(),
        TraceOp::TurnEnd { .. } => "turn end".into(),
        TraceOp::Reset { .. } => "/new".into(),
        TraceOp::Spawn {
            process,
            watch,
            notify,
            ..
        } => format!(
            "spawn {process}{}{}",
            if watch.is_empty() { "" } else { " watch" },
            if *notify { " notify" } else { "" }
        ),
        TraceOp::Output { process, .. } => format!("{process} output"),
        TraceOp::Exit { process, code } => format!("{process} exit {code}"),
        TraceOp::Kill { process } => format!("kill {process}"),
        TraceOp::Read { process, .. } => format!("reads {process}"),
        TraceOp::Advance { ms } => format!("+{ms} ms"),
        TraceOp::Adapter { up } => format!("adapter {}", if *up { "up" } else { "down" }),
        TraceOp::Restart { survive } => {
            format!("restart{}", if *survive { "" } else { " (processes lost)" })
        }
        TraceOp::Shutdown => "shutdown".into(),
    }
}

/// The text swimlane: one column per thread, one row per step, deliveries
/// under the step that caused them.
pub fn timeline_text(trace: &Trace, result: &TraceResult) -> String {
    const W: usize = 22;
    let n = trace.threads.len();
    let mut out = String::new();
    for (i, t) in trace.threads.iter().enumerate() {
        let _ = writeln!(
            out,
            "  T{i} = {}",
            serde_json::to_string(t).unwrap_or_default()
        );
    }
    let _ = write!(out, "{:<6}", "step");
    for i in 0..n {
        let _ = write!(out, "{:<W$}", format!("T{i}"));
    }
    out.push('\n');
    let cell = |s: &str| -> String { s.chars().take(W - 1).collect() };
    let quiet = |step: usize| {
        matches!(trace.ops.get(step), Some(TraceOp::Advance { .. }))
            && !result.deliveries.iter().any(|d| d.step == step)
    };
    let mut skip_to = 0;
    for (step, op) in trace.ops.iter().enumerate() {
        if step < skip_to {
            continue;
        }
        // A run of identical idle advances (the quiescence suffix) is one
        // row: `5-16  +61000 ms ×12`.
        let mut end = step;
        while quiet(step) && quiet(end + 1) && trace.ops.get(end + 1) == Some(op) {
            end += 1;
        }
        if end > step {
            let span = format!("{step}-{end}");
            let _ = writeln!(
                out,
                "{span:<6}{}{} ×{}",
                " ".repeat(W * n),
                short(op),
                end - step + 1
            );
            skip_to = end + 1;
            continue;
        }
        let mut row = format!("{step:<6}");
        let lane = op_lane(trace, op, step);
        for i in 0..n {
            let text = if Some(i) == lane {
                cell(&short(op))
            } else {
                String::new()
            };
            let _ = write!(row, "{text:<W$}");
        }
        if lane.is_none() {
            row.push_str(&short(op));
        }
        out.push_str(row.trim_end());
        out.push('\n');
        for d in result.deliveries.iter().filter(|d| d.step == step) {
            let got = lane_of(trace, &d.destination);
            // Two trace threads that differ only in the user are one place
            // (DELIVER-2): a delivery there is home for either of them.
            let home = d
                .process
                .as_deref()
                .and_then(|p| home_of(trace, p, d.step))
                .map(|h| first_of_place(trace, h));
            let wrong = d.process.is_some() && home != got;
            let label = format!(
                "{}→ {} {}",
                if wrong { "!! " } else { "" },
                d.process.as_deref().unwrap_or("notice"),
                d.kind.as_str()
            );
            let mut row = format!("{:<6}", "");
            for i in 0..n {
                let text = if Some(i) == got {
                    cell(&label)
                } else {
                    String::new()
                };
                let _ = write!(row, "{text:<W$}");
            }
            if got.is_none() {
                let _ = write!(row, "{label} to a place no thread has: {}", d.destination);
            }
            out.push_str(row.trim_end());
            if wrong {
                let _ = write!(
                    out,
                    "   MISROUTED: home is T{}",
                    home.map_or("?".into(), |h| h.to_string())
                );
            }
            out.push('\n');
        }
    }
    for d in &result.dead_letters {
        let _ = writeln!(
            out,
            "dead letter: {} {} for T{}",
            d.process.as_deref().unwrap_or("notice"),
            d.kind.as_str(),
            lane_of(trace, &d.destination).map_or("?".into(), |l| l.to_string())
        );
    }
    out
}

/// A file-name- and id-safe form of a label (badges' file names, the
/// history sections' ids): lower-case letters, digits and dots, runs of
/// anything else one `-`.
pub fn slug(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s
        .split('-')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if s.is_empty() {
        "implementation".into()
    } else {
        s
    }
}

/// Text for XML and HTML: markup characters as entities; characters XML
/// forbids (C0 controls but tab and newline, U+FFFE, U+FFFF) and DEL as
/// visible `\u{…}`, so a hostile id cannot break the picture or the page.
pub(crate) fn esc(s: &str) -> String {
    escape_xml(s, false)
}

/// [`esc`], and for an XML attribute value (`attribute`) tab, newline and
/// carriage return as character references, which XML would otherwise
/// normalise to spaces there.
pub(crate) fn escape_xml(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' if attribute => {
                let _ = write!(out, "&#{};", c as u32);
            }
            '\t' | '\n' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The same timeline as a standalone SVG picture.
pub fn timeline_svg(trace: &Trace, result: &TraceResult) -> String {
    let n = trace.threads.len().max(1);
    let (lane_w, row_h, left, top) = (170usize, 18usize, 60usize, 60usize);
    let mut rows: Vec<(usize, Option<usize>, String, &'static str)> = Vec::new();
    for (step, op) in trace.ops.iter().enumerate() {
        rows.push((step, op_lane(trace, op, step), short(op), "#333"));
        for d in result.deliveries.iter().filter(|d| d.step == step) {
            let got = lane_of(trace, &d.destination);
            // Two trace threads that differ only in the user are one place
            // (DELIVER-2): a delivery there is home for either of them.
            let home = d
                .process
                .as_deref()
                .and_then(|p| home_of(trace, p, d.step))
                .map(|h| first_of_place(trace, h));
            let wrong = d.process.is_some() && home != got;
            let label = format!(
                "→ {} {}",
                d.process.as_deref().unwrap_or("notice"),
                d.kind.as_str()
            );
            rows.push((step, got, label, if wrong { "#c00" } else { "#070" }));
        }
    }
    let width = left + n * lane_w + 20;
    let height = top + rows.len() * row_h + 20;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"monospace\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (i, t) in trace.threads.iter().enumerate() {
        let x = left + i * lane_w;
        let _ = writeln!(
            s,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{height}\" stroke=\"#ccc\"/><text x=\"{}\" y=\"20\" font-weight=\"bold\">T{i}</text><text x=\"{}\" y=\"36\">{}</text>",
            top - 10,
            x + 4,
            x + 4,
            esc(&format!("{} {}", t.platform, t.thread_id.as_deref().unwrap_or(&t.chat_id)).chars().take(26).collect::<String>())
        );
    }
    for (k, (step, lane, label, color)) in rows.iter().enumerate() {
        let y = top + k * row_h + 12;
        let _ = writeln!(s, "<text x=\"4\" y=\"{y}\" fill=\"#999\">{step}</text>");
        let x = left + lane.unwrap_or(0) * lane_w + 4;
        let _ = writeln!(
            s,
            "<text x=\"{x}\" y=\"{y}\" fill=\"{color}\">{}</text>",
            esc(label)
        );
    }
    s.push_str("</svg>\n");
    s
}
