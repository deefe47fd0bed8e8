//! The cross-process shrinker: candidates are re-run through the harness.

use super::{well_formed, Trace, TraceOp};

/// Greedy minimisation: drop one operation at a time (a spawn together with
/// everything that mentions its process), keep the drop while `still_fails`
/// says the trace still breaks `rule`; when no op can go, drop threads
/// only the quiescence suffix names. Bounded by `max_attempts` runs.
pub fn shrink(
    trace: &Trace,
    mut keep_suffix: usize,
    max_attempts: usize,
    mut still_fails: impl FnMut(&Trace) -> bool,
) -> (Trace, usize) {
    let mut best = trace.clone();
    let mut attempts = 0;
    let mut changed = true;
    while changed && attempts < max_attempts {
        changed = false;
        let body = best.ops.len().saturating_sub(keep_suffix);
        for i in (0..body).rev() {
            if attempts >= max_attempts {
                break;
            }
            let mut cand = best.clone();
            let removed = cand.ops.remove(i);
            if let TraceOp::Spawn { process, .. } = &removed {
                cand.ops.retain(|o| match o {
                    TraceOp::Output { process: p, .. }
                    | TraceOp::Exit { process: p, .. }
                    | TraceOp::Kill { process: p }
                    | TraceOp::Read { process: p, .. } => p != process,
                    _ => true,
                });
            }
            if !well_formed(&cand) {
                continue; // e.g. dropping an exit would respawn a running id
            }
            attempts += 1;
            if still_fails(&cand) {
                best = cand;
                changed = true;
                break;
            }
        }
        if changed {
            continue;
        }
        // No op can go: try threads only the quiescence suffix mentions.
        for t in (0..best.threads.len()).rev() {
            if attempts >= max_attempts {
                break;
            }
            let Some(cand) = drop_thread(&best, t) else {
                continue;
            };
            attempts += 1;
            if still_fails(&cand) {
                // The suffix's `turn_end` of that thread went with it.
                let from = best.ops.len().saturating_sub(keep_suffix);
                let gone = best.ops[from..]
                    .iter()
                    .filter(|o| matches!(o, TraceOp::TurnEnd { thread } if *thread == t))
                    .count();
                keep_suffix = keep_suffix.saturating_sub(gone);
                best = cand;
                changed = true;
                break;
            }
        }
    }
    (best, attempts)
}

/// `trace` without thread `t`, if only `turn_end` ops name it (the
/// quiescence suffix names every thread); later threads are renumbered.
/// `None` if another op names it or it is the only thread.
pub fn drop_thread(trace: &Trace, t: usize) -> Option<Trace> {
    if trace.threads.len() < 2 || t >= trace.threads.len() {
        return None;
    }
    let mut ops = Vec::with_capacity(trace.ops.len());
    for op in &trace.ops {
        match op.thread() {
            Some(x) if x == t => {
                if matches!(op, TraceOp::TurnEnd { .. }) {
                    continue;
                }
                return None;
            }
            Some(x) if x > t => {
                let mut op = op.clone();
                if let Some(thread) = op.thread_mut() {
                    *thread -= 1;
                }
                ops.push(op);
            }
            _ => ops.push(op.clone()),
        }
    }
    let mut threads = trace.threads.clone();
    threads.remove(t);
    Some(Trace { threads, ops })
}
