//! The generator: families of related threads and rule-reaching scenarios.

use super::steer::{Shape, Steering};
use super::{quiescence, twins, Trace, TraceOp};
use crate::conform::constraint::Constraints;
use crate::gen::{self, Rng};

use super::{from_origin, to_origin, RawOrigin};

/// nasty-id generators, then relatives of it — another topic of the same
/// chat, the same topic for another user, ids that differ only in case,
/// surrounding white space, where a `:` falls, Unicode normalisation or the
/// last byte of a long shared prefix — and an unrelated chat or two.
pub fn generate_threads(rng: &mut Rng) -> Vec<RawOrigin> {
    generate_threads_within(rng, &Constraints::default())
}

/// [`generate_threads`] that only yields origins the implementation
/// accepts (its declared constraints, P-12): a refused relative is not
/// added and a refused base is drawn again; only if 32 draws are all
/// refused is the last one repaired character by character.
pub fn generate_threads_within(rng: &mut Rng, limits: &Constraints) -> Vec<RawOrigin> {
    generate_threads_steered(rng, limits, &Steering::default())
}

/// [`generate_threads_within`] without the thread shapes `steering`
/// leaves out (P-13: padded ids, a thread id equal to a user id): a base
/// with one is drawn again, a relative with one is not added.
pub fn generate_threads_steered(
    rng: &mut Rng,
    limits: &Constraints,
    steering: &Steering,
) -> Vec<RawOrigin> {
    let mut base = from_origin(gen::origin(rng));
    for _ in 0..32 {
        if limits.broken_by(&base).is_none() && !steering.refuses_thread(&base, &[]) {
            break;
        }
        base = from_origin(gen::origin(rng));
    }
    if limits.broken_by(&base).is_some() {
        let fixed = limits.repair(&base);
        if to_origin(&fixed).is_ok() {
            base = fixed;
        }
    }
    let want = 3 + rng.below(4);
    let mut out = vec![base.clone()];
    let mut tries = 0;
    while out.len() < want && tries < 64 {
        tries += 1;
        let from = out[rng.below(out.len())].clone();
        let mut o = from.clone();
        let flip = |s: &str| -> String {
            let f: String = s
                .chars()
                .map(|c| {
                    if c.is_lowercase() {
                        c.to_uppercase().next().unwrap_or(c)
                    } else {
                        c.to_lowercase().next().unwrap_or(c)
                    }
                })
                .collect();
            if f == s {
                format!("{s}A")
            } else {
                f
            }
        };
        match rng.below(10) {
            // Another topic (forum topic, Slack thread) of the same chat.
            0 => {
                o.chat_type = "group".into();
                o.thread_id = Some(gen::id_string(rng));
            }
            // The same thread, another user (one destination, two lanes).
            1 => o.user_id = Some(format!("{}2", o.user_id.clone().unwrap_or_default())),
            // Differs only in case.
            2 => match &o.thread_id {
                Some(t) if rng.chance(50) => o.thread_id = Some(flip(t)),
                _ => o.chat_id = flip(&o.chat_id),
            },
            // Surrounding white space.
            3 => match &o.thread_id {
                Some(t) if rng.chance(50) => o.thread_id = Some(format!("{t} ")),
                _ => o.chat_id = format!(" {}", o.chat_id),
            },
            // Where a `:` falls: chat "a:b" + thread "c" vs chat "a" + "b:c".
            4 => {
                let (a, b) = (gen::id_string(rng), gen::id_string(rng));
                if rng.chance(50) {
                    o.chat_id = format!("{a}:{b}");
                    o.thread_id = Some("c".into());
                } else {
                    o.chat_id = a;
                    o.thread_id = Some(format!("{b}:c"));
                }
            }
            // Unicode normalisation: composed and decomposed é.
            5 => {
                o.thread_id = Some(if rng.chance(50) {
                    "caf\u{e9}".into()
                } else {
                    "cafe\u{301}".into()
                })
            }
            // A long shared prefix.
            6 => {
                let prefix = "x".repeat(500);
                o.chat_id = format!("{prefix}{}", rng.below(3));
            }
            // Another chat of the same platform.
            7 => o.chat_id = gen::id_string(rng),
            // Thread id equal to a user id (topic 42 vs user 42).
            8 => {
                o.thread_id = None;
                o.user_id = from.thread_id.clone().or(Some("42".into()));
            }
            _ => o = from_origin(gen::origin(rng)),
        }
        if to_origin(&o).is_ok()
            && limits.broken_by(&o).is_none()
            && !steering.refuses_thread(&o, &out)
        {
            out.push(o);
        }
    }
    out
}

/// Output advances that sit on and next to the spec's boundaries (PROC-4's
/// 15 s, PROC-6's 10 s and 30 s, DELIVER-4's backoff and 60 s cap).
const ADVANCES: &[u64] = &[
    100, 1_000, 2_000, 5_000, 9_999, 10_000, 14_999, 15_000, 16_000, 30_000, 31_000, 61_000,
    120_000,
];

struct Gen {
    rng: Rng,
    n: usize,
    ops: Vec<TraceOp>,
    next_proc: usize,
    tokens: usize,
    running: Vec<String>,
    exited: Vec<String>,
    steering: Steering,
}

impl Gen {
    fn thread(&mut self) -> usize {
        self.rng.below(self.n)
    }

    /// `watch` and `notify` of a spawn, without the spawn shapes the
    /// trace leaves out (P-13).
    fn steer_spawn(&mut self, watch: bool, notify: bool) -> (bool, bool) {
        let (mut watch, mut notify) = (watch, notify);
        if watch && !notify && self.steering.avoids(Shape::WatchOnly) {
            notify = true;
        }
        if watch && notify && self.steering.avoids(Shape::WatchWithNotify) {
            if self.rng.chance(50) || self.steering.avoids(Shape::WatchOnly) {
                watch = false;
            } else {
                notify = false;
            }
        }
        (watch, notify)
    }

    fn spawn(&mut self, watch: bool, notify: bool) -> String {
        let (watch, notify) = self.steer_spawn(watch, notify);
        let thread = self.thread();
        // A process id spawned again (possibly from another thread).
        let process = if !self.exited.is_empty() && self.rng.chance(25) {
            let i = self.rng.below(self.exited.len());
            self.exited.remove(i)
        } else {
            self.next_proc += 1;
            format!("p{}", self.next_proc)
        };
        self.running.push(process.clone());
        let mut patterns = vec!["MATCH".to_owned()];
        if self.rng.chance(20) {
            patterns.push("ERR".into());
        }
        self.ops.push(TraceOp::Spawn {
            thread,
            process: process.clone(),
            watch: if watch { patterns } else { vec![] },
            notify,
        });
        process
    }

    fn line(&mut self, process: &str, hit: bool) -> String {
        self.tokens += 1;
        let t = self.tokens;
        let mut l = format!("tok{t}of{process}");
        let control = !self.steering.avoids(Shape::ControlOutput);
        match self.rng.below(12) {
            0 if control => l.push_str(" \t\u{1b}[31mred\u{1b}[0m"),
            1 if control => l.push_str(" \u{202e}evil\u{2028}x"),
            2 => l.push_str(" [Background process p1 exited with code 0]"),
            3 if control => l.push('\r'),
            4 => l.push_str(&" y".repeat(1_100)),
            _ => {}
        }
        if hit {
            l.push_str(if self.rng.chance(85) {
                " MATCH"
            } else {
                " ERR"
            });
            // A matching line that ends `\r\n`: its excerpt line must not
            // keep the `\r` (PROC-3). Chosen by the token number, not drawn,
            // so the rest of a seed's trace is what it was before.
            if control && t % 5 == 2 {
                l.push('\r');
            }
        }
        l
    }

    fn output(&mut self, process: String, hits: usize, misses: usize) {
        let mut lines = Vec::new();
        for _ in 0..hits {
            lines.push(self.line(&process, true));
        }
        for _ in 0..misses {
            let l = self.line(&process, false);
            let at = self.rng.below(lines.len() + 1);
            lines.insert(at, l);
        }
        let mut text = lines.join("\n");
        if self.rng.chance(90) {
            text.push('\n');
        }
        self.ops.push(TraceOp::Output { process, text });
        if hits > 0 && self.steering.avoids(Shape::UndrainedMatch) {
            let thread = self.thread();
            self.ops.push(TraceOp::Message { thread });
        }
    }

    /// The process is no longer running (its id may be spawned again).
    fn ended(&mut self, process: &str) {
        self.running.retain(|p| p != process);
        if !self.exited.iter().any(|p| p == process) {
            self.exited.push(process.to_owned());
        }
    }

    fn end(&mut self, process: &str) {
        self.ended(process);
        let op = if self.rng.chance(60) {
            TraceOp::Exit {
                process: process.to_owned(),
                code: self.rng.below(3) as i32,
            }
        } else {
            TraceOp::Kill {
                process: process.to_owned(),
            }
        };
        self.ops.push(op);
    }

    fn any_process(&mut self) -> Option<String> {
        // Mostly running ones; sometimes an ended one (its ops are no-ops).
        if !self.running.is_empty() && (self.exited.is_empty() || self.rng.chance(85)) {
            Some(self.rng.pick(&self.running).clone())
        } else if !self.exited.is_empty() {
            Some(self.rng.pick(&self.exited).clone())
        } else {
            None
        }
    }

    fn advance(&mut self) {
        let ms = *self.rng.pick(ADVANCES);
        self.ops.push(TraceOp::Advance { ms });
    }

    /// One random operation.
    fn random_op(&mut self) {
        let t = self.thread();
        match self.rng.below(16) {
            0 | 1 => self.ops.push(TraceOp::Message { thread: t }),
            2 if !self.steering.avoids(Shape::Turns) => {
                self.ops.push(TraceOp::TurnStart { thread: t })
            }
            2 => self.ops.push(TraceOp::Message { thread: t }),
            3 => self.ops.push(TraceOp::TurnEnd { thread: t }),
            4 => self.ops.push(TraceOp::Reset { thread: t }),
            5 | 6 => {
                let (w, n) = (self.rng.chance(60), self.rng.chance(70));
                self.spawn(w, n);
            }
            7 | 8 => {
                if let Some(p) = self.any_process() {
                    let hits = usize::from(self.rng.chance(60)) * (1 + self.rng.below(2));
                    let misses = usize::from(hits == 0 || self.rng.chance(30));
                    self.output(p, hits, misses);
                }
            }
            9 => {
                if let Some(p) = self.any_process() {
                    self.end(&p);
                }
            }
            10 | 11 => self.advance(),
            12 => {
                let up = self.rng.chance(50) || self.steering.avoids(Shape::AdapterDown);
                self.ops.push(TraceOp::Adapter { up });
            }
            13 => {
                let survive = self.rng.chance(50);
                if self.steering.avoids(Shape::Restart) {
                    self.ops.push(TraceOp::Advance { ms: 1_000 });
                    return;
                }
                if !survive {
                    for p in std::mem::take(&mut self.running) {
                        self.ended(&p);
                    }
                }
                self.ops.push(TraceOp::Restart { survive });
            }
            14 if !self.steering.avoids(Shape::Shutdown) => self.ops.push(TraceOp::Shutdown),
            _ => self.ops.push(TraceOp::Advance { ms: 1_000 }),
        }
    }

    /// A scenario that reaches a rule random operations rarely reach.
    fn scenario(&mut self) {
        match self.rng.below(7) {
            // A storm: many watching processes match within a few seconds
            // (PROC-6's breaker, TEXT-4's counts).
            0 => {
                let k = 12 + self.rng.below(10);
                let procs: Vec<String> = (0..k)
                    .map(|_| {
                        // Steered off both-at-once, a storm keeps its
                        // watches (it is there for PROC-6).
                        let n =
                            self.rng.chance(50) && !self.steering.avoids(Shape::WatchWithNotify);
                        self.spawn(true, n)
                    })
                    .collect();
                for p in procs {
                    let hits = 1 + self.rng.below(2);
                    self.output(p, hits, 0);
                    if self.rng.chance(20) {
                        self.ops.push(TraceOp::Advance { ms: 100 });
                    }
                }
                self.advance();
            }
            // Strikes: matches inside the cooldown, window after window
            // (PROC-4, PROC-5 and the completion a strike-out promises).
            1 => {
                let notify = self.rng.chance(30);
                let p = self.spawn(true, notify);
                let windows = 2 + self.rng.below(3);
                for _ in 0..windows {
                    self.output(p.clone(), 1, 0);
                    let drops = self.rng.below(3);
                    for _ in 0..drops {
                        let h = 1 + self.rng.below(2);
                        self.output(p.clone(), h, 0);
                    }
                    let ms = *self.rng.pick(&[14_999, 15_000, 16_000]);
                    self.ops.push(TraceOp::Advance { ms });
                }
                if self.rng.chance(70) {
                    self.end(&p);
                }
            }
            // An adapter outage, long enough to exhaust the retries or not
            // (DELIVER-4).
            2 => {
                if !self.steering.avoids(Shape::AdapterDown) {
                    self.ops.push(TraceOp::Adapter { up: false });
                }
                let n = self.rng.chance(70);
                let w = self.rng.chance(50);
                let p = self.spawn(w, n);
                self.output(p.clone(), 1, 1);
                self.end(&p);
                for _ in 0..1 + self.rng.below(7) {
                    let ms = *self.rng.pick(&[1_000, 2_000, 4_000, 8_000, 16_000, 61_000]);
                    self.ops.push(TraceOp::Advance { ms });
                }
                self.ops.push(TraceOp::Adapter { up: true });
            }
            // A busy thread, a long idle period with work queued behind it
            // (DELIVER-2, INV-8), foreground traffic elsewhere (INV-6).
            3 => {
                let t = self.thread();
                let turn = !self.steering.avoids(Shape::Turns);
                if turn {
                    self.ops.push(TraceOp::TurnStart { thread: t });
                }
                let w = self.rng.chance(50);
                let p = self.spawn(w, true);
                if let Some(TraceOp::Spawn { thread, .. }) = self.ops.last_mut() {
                    *thread = t;
                }
                self.output(p.clone(), 1, 1);
                let other = self.thread();
                self.ops.push(TraceOp::Message { thread: other });
                self.end(&p);
                self.ops.push(TraceOp::Advance { ms: 120_000 });
                if turn {
                    self.ops.push(TraceOp::TurnEnd { thread: t });
                }
                self.advance();
            }
            // A process id spawned again from another thread; the first
            // run's notifications may still be queued (INV-1).
            4 => {
                let p = self.spawn(true, true);
                self.output(p.clone(), 1, 0);
                self.end(&p);
                self.exited.retain(|x| x != &p);
                self.running.push(p.clone());
                let t = self.thread();
                let (watch, notify) = self.steer_spawn(true, true);
                self.ops.push(TraceOp::Spawn {
                    thread: t,
                    process: p.clone(),
                    watch: if watch { vec!["MATCH".into()] } else { vec![] },
                    notify,
                });
                self.output(p.clone(), 1, 0);
                self.end(&p);
            }
            // Processes die while the gateway is down (PROC-8).
            5 => {
                let w = self.rng.chance(50);
                let p = self.spawn(w, true);
                self.output(p, 0, 1);
                if !self.steering.avoids(Shape::Restart) {
                    for p in std::mem::take(&mut self.running) {
                        self.ended(&p);
                    }
                    self.ops.push(TraceOp::Restart { survive: false });
                }
            }
            // A shutdown, with notices for every thread with a lane
            // (DELIVER-8), sometimes while the adapter fails.
            _ => {
                let t = self.thread();
                self.ops.push(TraceOp::Message { thread: t });
                if self.rng.chance(30) && !self.steering.avoids(Shape::AdapterDown) {
                    self.ops.push(TraceOp::Adapter { up: false });
                }
                if !self.steering.avoids(Shape::Shutdown) {
                    self.ops.push(TraceOp::Shutdown);
                }
                self.advance();
            }
        }
    }
}

/// A generated trace: a family of related threads, random operations and
/// scenarios that reach every judged rule (storms, strikes, outages, busy
/// threads, second runs, deaths in restarts, shutdowns), a lane twin in
/// some (a thread whose ids collide with another's, [`twins`]), with unique
/// process ids (a running id is never spawned again) and the quiescence
/// suffix appended. `max_steps` bounds the random operations.
pub fn generate(seed: u64, max_steps: usize) -> Trace {
    generate_within(seed, max_steps, &Constraints::default())
}

/// [`generate`] whose threads respect an implementation's declared
/// constraints (the same seed gives the same trace for the same
/// constraints; without any, exactly [`generate`]'s trace).
pub fn generate_within(seed: u64, max_steps: usize, limits: &Constraints) -> Trace {
    generate_steered(seed, max_steps, limits, &Steering::default())
}

/// [`generate_within`] without the shapes `steering` leaves out (P-13,
/// an implementation's generation profile): with none left out, exactly
/// [`generate_within`]'s trace.
pub fn generate_steered(
    seed: u64,
    max_steps: usize,
    limits: &Constraints,
    steering: &Steering,
) -> Trace {
    let mut rng = Rng::new(seed);
    let mut threads = generate_threads_steered(&mut rng, limits, steering);
    let mut g = Gen {
        n: threads.len(),
        rng,
        ops: Vec::new(),
        next_proc: 0,
        tokens: 0,
        running: Vec::new(),
        exited: Vec::new(),
        steering: steering.clone(),
    };
    let steps = 1 + g.rng.below(max_steps.max(1));
    for _ in 0..steps {
        if g.rng.chance(12) {
            g.scenario();
        } else {
            g.random_op();
        }
    }
    let n = g.n;
    let ops = with_reads(seed, n, g.ops, !steering.avoids(Shape::Read));
    let ops = twins::with_twin(seed, &mut threads, ops, limits, steering);
    let mut ops = limits.strip_ops(ops);
    ops.extend(quiescence(threads.len()));
    Trace { threads, ops }
}

/// The agents' reads (PROC-10) put into generated operations: after an
/// output line sometimes, after a process ends often (the read that makes
/// a gateway think the agent has seen the result), from the process's own
/// thread or another one. Drawn from their own stream, so the rest of a
/// seed's trace is what it was before reads existed.
fn with_reads(seed: u64, threads: usize, ops: Vec<TraceOp>, reads: bool) -> Vec<TraceOp> {
    let mut rng = Rng::new(seed ^ 0x5EAD_0F0A_9E47);
    let mut home: std::collections::BTreeMap<String, usize> = Default::default();
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let after = match &op {
            TraceOp::Spawn {
                thread, process, ..
            } => {
                home.insert(process.clone(), *thread);
                None
            }
            TraceOp::Output { process, .. } if rng.chance(8) => Some(process.clone()),
            TraceOp::Exit { process, .. } | TraceOp::Kill { process } if rng.chance(30) => {
                Some(process.clone())
            }
            _ => None,
        };
        out.push(op);
        if let Some(process) = after.filter(|_| reads) {
            let own = home.get(&process).copied().unwrap_or(0);
            let thread = if rng.chance(50) {
                own
            } else {
                rng.below(threads.max(1))
            };
            out.push(TraceOp::Read { thread, process });
        }
    }
    out
}
