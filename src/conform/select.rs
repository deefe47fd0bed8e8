//! Selection and bookkeeping: `--only` / `--skip` by stable id or glob,
//! `--shard I/N`, and `--known-failures FILE` (cases that must still fail).

use std::collections::BTreeSet;

use super::Outcome;

/// `*` matches any run of characters, everything else matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

#[derive(Debug, Clone, Default)]
/// Which cases a run includes: `--only`, `--skip`, `--shard`.
pub struct Selection {
    /// Run only cases whose id matches one of these globs (all when empty).
    pub only: Vec<String>,
    /// Skip cases whose id matches one of these globs.
    pub skip: Vec<String>,
    /// `(index, count)`, index in `1..=count`.
    pub shard: Option<(u64, u64)>,
}

impl Selection {
    /// Parses `I/N` (`1 <= I <= N`).
    pub fn parse_shard(s: &str) -> Result<(u64, u64), String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("--shard {s:?}: expected I/N"))?;
        let i: u64 = i
            .parse()
            .map_err(|_| format!("--shard {s:?}: I is not a number"))?;
        let n: u64 = n
            .parse()
            .map_err(|_| format!("--shard {s:?}: N is not a number"))?;
        if n == 0 || i == 0 || i > n {
            return Err(format!("--shard {s:?}: need 1 <= I <= N"));
        }
        Ok((i, n))
    }

    /// Whether the case with this stable id runs here.
    pub fn wants(&self, id: &str) -> bool {
        if !self.only.is_empty() && !self.only.iter().any(|p| glob(p, id)) {
            return false;
        }
        if self.skip.iter().any(|p| glob(p, id)) {
            return false;
        }
        match self.shard {
            // A stable hash of the id (FNV-1a), so shards do not depend on
            // the order or number of other cases.
            Some((i, n)) => fnv(id) % n == i - 1,
            None => true,
        }
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Parses a known-failures file: one id or glob per line, `#` comments.
pub fn parse_known_failures(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The findings a known-failures file names: for each id or glob, the
/// first word of its `#` comment (`hermes-parse/profile  # H-PARSE-PROFILE`),
/// the heading of its explanation in the implementation's FINDINGS.md.
pub fn parse_known_findings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (pattern, comment) = l.split_once('#')?;
            let pattern = pattern.trim();
            let finding = comment.split_whitespace().next()?;
            (!pattern.is_empty()).then(|| (pattern.to_owned(), finding.to_owned()))
        })
        .collect()
}

/// One known-failures line: the case (id or glob), its finding, and the
/// signatures of the violations it is pinned to
/// (`gen/1/7  # H-WATCH-DROPPED INV-4:watch_match DELIVER-1:completion`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The case id or glob.
    pub pattern: String,
    /// The finding (FINDINGS.md heading), if the line names one.
    pub finding: Option<String>,
    /// The violation signatures ([`crate::model::judge::Violation::signature`]).
    pub signatures: BTreeSet<String>,
    /// The line's comment holds the word `flaky`: the harness does not
    /// run this case deterministically (the implementation's FINDINGS.md
    /// says why), so a pass is not "now passes"; a failure is still held
    /// to the pinned signatures.
    pub flaky: bool,
    /// Signatures written `?SIG`: violations the case may or may not
    /// show (a flaky case's varying part); any other change still counts.
    pub maybe: BTreeSet<String>,
}

/// Whether a word of a known-failures comment is a violation signature:
/// a rule id (`INV-1`, `DELIVER-6`), then `:kind`, then `@tN` or `@t?`.
pub fn is_signature(word: &str) -> bool {
    let (rule, rest) = word.split_once(':').unwrap_or((word, ""));
    // Rule families are words (INV, PROC, DELIVER…); findings are a
    // letter and a name (H-LATE, O-CASE).
    let rule_ok = rule.split_once('-').is_some_and(|(a, b)| {
        a.len() >= 2
            && a.bytes().all(|c| c.is_ascii_uppercase())
            && !b.is_empty()
            && b.bytes().all(|c| c.is_ascii_alphanumeric())
    });
    if !rule_ok {
        return false;
    }
    if rest.is_empty() {
        return !word.contains(':');
    }
    let (kind, at) = rest.split_once('@').unwrap_or((rest, ""));
    let kind_ok = ["watch_match", "watch_disabled", "completion", "shutdown"].contains(&kind);
    let at_ok = !rest.contains('@')
        || at == "t?"
        || at
            .strip_prefix('t')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
    kind_ok && at_ok
}

/// Parses every line of a known-failures file into a [`Pin`]: the first
/// word of the comment is the finding unless it is a signature; every
/// signature word after it is pinned, every `?`-prefixed one allowed to
/// come and go; other words are prose.
pub fn parse_pins(text: &str) -> Vec<Pin> {
    text.lines()
        .filter_map(|l| {
            let (pattern, comment) = l.split_once('#').unwrap_or((l, ""));
            let pattern = pattern.trim();
            if pattern.is_empty() {
                return None;
            }
            let mut words = comment.split_whitespace().peekable();
            let finding = words
                .peek()
                .filter(|w| !is_signature(w))
                .map(|w| (*w).to_owned());
            if finding.is_some() {
                words.next();
            }
            let flaky = comment.split_whitespace().any(|w| w == "flaky");
            let words: Vec<&str> = words.collect();
            Some(Pin {
                pattern: pattern.to_owned(),
                flaky,
                finding,
                signatures: words
                    .iter()
                    .filter(|w| is_signature(w))
                    .map(|w| (*w).to_owned())
                    .collect(),
                maybe: words
                    .iter()
                    .filter_map(|w| w.strip_prefix('?'))
                    .filter(|w| is_signature(w))
                    .map(str::to_owned)
                    .collect(),
            })
        })
        .collect()
}

/// Holds every known failure to what its line pins: a failing trace case
/// (one with violation signatures) whose signatures differ from its line's
/// (a new rule, a new thread a notice landed in, a violation gone) is no
/// longer an expected failure; its detail names the change. A line that
/// pins nothing matches by id alone, as lists did before pins. Returns one
/// message per changed case.
pub fn check_pins(outcomes: &mut [Outcome], pins: &[Pin]) -> Vec<String> {
    let mut changed = Vec::new();
    for o in outcomes.iter_mut() {
        if !o.expected_failure || o.violations.is_empty() {
            continue;
        }
        let Some(pin) = pins.iter().find(|p| glob(&p.pattern, &o.id)) else {
            continue;
        };
        let now: BTreeSet<String> = o.violations.iter().cloned().collect();
        // `?SIG` words may come and go; the rest must be exactly there.
        let now_fixed: BTreeSet<String> = now.difference(&pin.maybe).cloned().collect();
        if now_fixed == pin.signatures {
            continue;
        }
        if pin.signatures.is_empty() && pin.maybe.is_empty() {
            // A line that pins nothing (an older list) matches by id alone.
            continue;
        }
        let now = now_fixed;
        let new: Vec<&str> = now
            .difference(&pin.signatures)
            .map(String::as_str)
            .collect();
        let gone: Vec<&str> = pin
            .signatures
            .difference(&now)
            .map(String::as_str)
            .collect();
        let mut why = format!("known failure {} changed:", o.id);
        if !new.is_empty() {
            why.push_str(&format!(" new {}", new.join(" ")));
        }
        if !gone.is_empty() {
            why.push_str(&format!(
                "{} no longer {}",
                if new.is_empty() { "" } else { ";" },
                gone.join(" ")
            ));
        }
        o.expected_failure = false;
        o.detail = Some(format!("{why}\n{}", o.detail.as_deref().unwrap_or("")));
        changed.push(why);
    }
    changed
}

/// Names, on every expected failure, the finding of the first line of
/// `findings` ([`parse_known_findings`]) whose pattern matches its id.
pub fn tag_findings(outcomes: &mut [Outcome], findings: &[(String, String)]) {
    for o in outcomes.iter_mut().filter(|o| o.expected_failure) {
        o.finding = first_match(findings, &o.id);
    }
}

/// The upstream links a known-failures file gives: for each id or glob,
/// the first `http(s)://` word of its `#` comment (`gen/1/7  # H-BUSY
/// https://github.com/o/r/issues/12 INV-4`), the issue or pull request
/// where the finding is reported upstream.
pub fn parse_upstream_links(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (pattern, comment) = l.split_once('#')?;
            let pattern = pattern.trim();
            let url = comment
                .split_whitespace()
                .find(|w| w.starts_with("https://") || w.starts_with("http://"))?;
            (!pattern.is_empty()).then(|| (pattern.to_owned(), url.to_owned()))
        })
        .collect()
}

/// The value of the first `(pattern, value)` whose pattern matches `id`.
fn first_match(pairs: &[(String, String)], id: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(p, _)| glob(p, id))
        .map(|(_, v)| v.clone())
}

/// Sets each known failure's upstream link from its known-failures line.
pub fn tag_upstream(outcomes: &mut [Outcome], links: &[(String, String)]) {
    for o in outcomes.iter_mut().filter(|o| o.expected_failure) {
        o.upstream = first_match(links, &o.id);
    }
}

/// Applies known failures: an expected failure that fails is marked
/// expected (not counted as unexpected); one that passes is reported.
pub fn apply_known_failures(outcomes: &mut [Outcome], known: &[String]) -> BTreeSet<String> {
    let mut now_passing = BTreeSet::new();
    for o in outcomes.iter_mut() {
        if known.iter().any(|p| glob(p, &o.id)) {
            if o.passed && o.skipped.is_none() {
                now_passing.insert(o.id.clone());
            } else if !o.passed {
                o.expected_failure = true;
            }
        }
    }
    now_passing
}

/// Takes the cases whose known-failures line is marked `flaky` out of
/// `now_passing` (a pass of a case the harness does not run
/// deterministically is no news) and names each, for the run's output.
pub fn forgive_flaky(now_passing: &mut BTreeSet<String>, pins: &[Pin]) -> Vec<String> {
    let mut forgiven = Vec::new();
    now_passing.retain(|id| {
        let flaky = pins.iter().any(|p| p.flaky && glob(&p.pattern, id));
        if flaky {
            forgiven.push(format!(
                "known failure {id} passed this time; its line is marked flaky (not deterministic on this harness)"
            ));
        }
        !flaky
    });
    forgiven
}
