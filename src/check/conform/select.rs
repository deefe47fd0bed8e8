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

/// Names, on every expected failure, the finding of the first line of
/// `findings` ([`parse_known_findings`]) whose pattern matches its id.
pub fn tag_findings(outcomes: &mut [Outcome], findings: &[(String, String)]) {
    for o in outcomes.iter_mut().filter(|o| o.expected_failure) {
        o.finding = findings
            .iter()
            .find(|(p, _)| glob(p, &o.id))
            .map(|(_, f)| f.clone());
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
