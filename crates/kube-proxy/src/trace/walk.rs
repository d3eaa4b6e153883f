//! The walk engine: chains in hook order, rules in chain order, jumps and gotos, verdicts,
//! NAT, and the branches a statistic match or `numgen` makes.

use super::matches::{Decision, Field, key_matches};
use super::state::{CondMark, End, Flow, Mode, Tracer, Walk, why};
use super::{Hop, Masquerade};
use crate::cascade::Stored;
use crate::ruleset::{
    Action, DnatSlot, Element, Hook, KeyPart, MapRef, Rule, Slot, Table, Verdict,
};

pub(super) const MAX_DEPTH: usize = 64;

/// Where a rule is: its table, chain, index and the depth of jumps.
struct At<'r, 'c> {
    table: &'r Table,
    chain: &'c str,
    index: usize,
    depth: usize,
}

impl<'r, 'c> At<'r, 'c> {
    fn new(table: &'r Table, chain: &'c str, index: usize, depth: usize) -> Self {
        Self {
            table,
            chain,
            index,
            depth,
        }
    }
}

/// What a numgen's slots lead to.
#[derive(Clone, Copy)]
enum Slots<'r> {
    /// `dnat to numgen ... map`: an endpoint each.
    Dnat(&'r [DnatSlot]),
    /// `numgen ... vmap`: a verdict each.
    Verdict(&'r [Slot]),
}

impl<'r> Tracer<'r> {
    /// Splits `walk` on a random match: (walk, matched).
    pub(super) fn branch(
        &mut self,
        walk: Walk,
        stored: Stored,
        negated: bool,
    ) -> Vec<(Walk, bool)> {
        match &mut self.mode {
            Mode::Explore => {
                let p = stored.probability();
                let (p_match, p_miss) = if negated { (1.0 - p, p) } else { (p, 1.0 - p) };
                let mut out = Vec::new();
                if p_match > 0.0 {
                    let mut taken = walk.clone();
                    taken.weight *= p_match;
                    out.push((taken, true));
                }
                if p_miss > 0.0 {
                    let mut missed = walk;
                    missed.weight *= p_miss;
                    out.push((missed, false));
                }
                out
            }
            Mode::Sample(rng) => {
                let matched = stored.matches(rng.u32(..)) != negated;
                vec![(walk, matched)]
            }
        }
    }

    /// Splits `walk` on a numgen over `ranges` (inclusive slot ranges): (walk, the index of
    /// the range the number falls in, or none).
    pub(super) fn numgen(
        &mut self,
        walk: Walk,
        modulus: u32,
        ranges: &[(u32, u32)],
    ) -> Vec<(Walk, Option<usize>)> {
        let slot_of = |value: u32| {
            ranges
                .iter()
                .position(|(low, high)| *low <= value && value <= *high)
        };
        match &mut self.mode {
            Mode::Explore => {
                let mut counts: Vec<(Option<usize>, u32)> = Vec::new();
                for value in 0..modulus {
                    let slot = slot_of(value);
                    match counts.iter_mut().find(|(s, _)| *s == slot) {
                        Some((_, n)) => *n += 1,
                        None => counts.push((slot, 1)),
                    }
                }
                counts
                    .into_iter()
                    .map(|(slot, n)| {
                        let mut w = walk.clone();
                        w.weight *= f64::from(n) / f64::from(modulus);
                        (w, slot)
                    })
                    .collect()
            }
            Mode::Sample(rng) => {
                // nft_ng_random: reciprocal_scale(random, modulus).
                let value = ((u64::from(rng.u32(..)) * u64::from(modulus)) >> 32) as u32;
                vec![(walk, slot_of(value))]
            }
        }
    }

    /// Runs `chain` of `table` from rule `from`.
    pub(super) fn chain(
        &mut self,
        walk: Walk,
        table: &'r Table,
        chain_name: &str,
        from: usize,
        depth: usize,
    ) -> Vec<(Walk, Flow)> {
        let Some(chain) = table.chain(chain_name) else {
            return vec![(walk, Flow::Return)];
        };
        let mut walk = walk;
        for index in from..chain.rules.len() {
            let rule = &chain.rules[index];
            match self.decide(table, rule, &walk) {
                Decision::No => continue,
                Decision::Unknown(why) => {
                    self.warn(rule, format!("{why}; assumed not to match"));
                    continue;
                }
                Decision::Source(conditions) => {
                    let when = conditions.join(" and ");
                    let masquerades = rule
                        .actions
                        .iter()
                        .any(|a| matches!(a, Action::Masquerade | Action::Snat(_)));
                    if let Some((and, xor)) = self.mark_only(table, rule) {
                        walk.cond_marks.push(CondMark {
                            and,
                            xor,
                            when,
                            step: Self::step(table, chain_name, rule),
                        });
                    } else if masquerades {
                        // Masqueraded by the rule itself, for some sources only (kube-proxy
                        // 1.36's `@hairpin-connections`): a condition of the report.
                        let step = Self::step(table, chain_name, rule);
                        walk.cond_masquerade.push(Masquerade {
                            why: why(&step, Some(&when)),
                            when: Some(when),
                            marked_by: None,
                            masqueraded_by: step,
                            endpoints: Vec::new(),
                        });
                    } else {
                        self.conditions.insert((
                            rule.line,
                            format!(
                                "{} {} line {}: taken only if {when} (pass --from to decide); not taken",
                                table.name, chain_name, rule.line
                            ),
                        ));
                    }
                    continue;
                }
                Decision::Random(stored, negated, text) => {
                    let mut out = Vec::new();
                    for (mut branch, matched) in self.branch(walk.clone(), stored, negated) {
                        if matched {
                            branch.probability = Some(text.clone());
                            out.extend(self.act(branch, table, chain_name, index, rule, depth));
                        } else {
                            out.extend(self.chain(branch, table, chain_name, index + 1, depth));
                        }
                    }
                    return out;
                }
                Decision::Yes => {
                    return self.act(walk, table, chain_name, index, rule, depth);
                }
            }
        }
        vec![(walk, Flow::Return)]
    }

    /// Runs `rule`'s statements, then the rest of the chain when they fall through.
    pub(super) fn act(
        &mut self,
        mut walk: Walk,
        table: &'r Table,
        chain_name: &str,
        index: usize,
        rule: &'r Rule,
        depth: usize,
    ) -> Vec<(Walk, Flow)> {
        let step = Self::step(table, chain_name, rule);
        for action in &rule.actions {
            match action {
                Action::Continue => {}
                Action::Unsupported(text) => {
                    self.warn(rule, format!("cannot run `{text}`; assumed to do nothing"));
                }
                Action::SetMark { and, xor } => {
                    let before = walk.mark;
                    walk.mark = (walk.mark & and) ^ xor;
                    if walk.mark & !before != 0 {
                        // The rule that asked for the mark: the jump into a marking chain
                        // (KUBE-MARK-MASQ), or this rule.
                        walk.marked_by =
                            Some(walk.calls.last().cloned().unwrap_or_else(|| step.clone()));
                    }
                }
                Action::Verdict(verdict) => {
                    walk.path.push(step.clone());
                    return self.verdict(walk, table, chain_name, index, verdict, &step, depth);
                }
                Action::Reject(_) => {
                    walk.path.push(step.clone());
                    return vec![(walk, Flow::Reject(step))];
                }
                Action::Dnat { ip, port } => {
                    walk.path.push(step.clone());
                    walk.dst = *ip;
                    walk.dport = port.unwrap_or(walk.dport);
                    walk.dnat = Some((*ip, walk.dport, step.clone()));
                    return vec![(walk, Flow::Accept)];
                }
                Action::Snat(_) | Action::Masquerade => {
                    walk.path.push(step.clone());
                    walk.masquerade = Some(step.clone());
                    return vec![(walk, Flow::Accept)];
                }
                Action::VerdictMap { key, map } => {
                    if let Some(verdict) = self.lookup(table, rule, key, map, &walk) {
                        walk.path.push(step.clone());
                        return self
                            .verdict(walk, table, chain_name, index, &verdict, &step, depth);
                    }
                }
                Action::DnatMap { modulus, slots } => {
                    let at = At::new(table, chain_name, index, depth);
                    return self.split(walk, &at, &step, *modulus, Slots::Dnat(slots));
                }
                Action::Numgen { modulus, slots } => {
                    let at = At::new(table, chain_name, index, depth);
                    return self.split(walk, &at, &step, *modulus, Slots::Verdict(slots));
                }
            }
        }
        self.chain(walk, table, chain_name, index + 1, depth)
    }

    /// A numgen's branches: each slot's DNAT (`dnat to numgen ... map`) or verdict
    /// (`numgen ... vmap`); a number no slot has fails the rule, and the chain goes on. Apart
    /// from [`Self::act`], whose frame every nested jump stacks.
    #[inline(never)]
    fn split(
        &mut self,
        walk: Walk,
        at: &At<'r, '_>,
        step: &Hop,
        modulus: u32,
        slots: Slots<'r>,
    ) -> Vec<(Walk, Flow)> {
        let ranges: Vec<(u32, u32)> = match slots {
            Slots::Dnat(slots) => slots.iter().map(|s| (s.low, s.high)).collect(),
            Slots::Verdict(slots) => slots.iter().map(|s| (s.low, s.high)).collect(),
        };
        let mut out = Vec::new();
        for (mut branch, slot) in self.numgen(walk, modulus, &ranges) {
            let Some(slot) = slot else {
                out.extend(self.chain(branch, at.table, at.chain, at.index + 1, at.depth));
                continue;
            };
            let (low, high) = ranges[slot];
            branch.path.push(step.clone());
            branch.probability = Some(format!("{}/{modulus}", high - low + 1));
            match slots {
                Slots::Dnat(slots) => {
                    let slot = &slots[slot];
                    branch.dst = slot.ip;
                    branch.dport = slot.port.unwrap_or(branch.dport);
                    branch.dnat = Some((slot.ip, branch.dport, step.clone()));
                    out.push((branch, Flow::Accept));
                }
                Slots::Verdict(slots) => out.extend(self.verdict(
                    branch,
                    at.table,
                    at.chain,
                    at.index,
                    &slots[slot].verdict,
                    step,
                    at.depth,
                )),
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn verdict(
        &mut self,
        walk: Walk,
        table: &'r Table,
        chain_name: &str,
        index: usize,
        verdict: &Verdict,
        step: &Hop,
        depth: usize,
    ) -> Vec<(Walk, Flow)> {
        match verdict {
            Verdict::Accept => vec![(walk, Flow::Accept)],
            Verdict::Drop => vec![(walk, Flow::Drop(step.clone()))],
            Verdict::Return => vec![(walk, Flow::Return)],
            Verdict::Continue => self.chain(walk, table, chain_name, index + 1, depth),
            Verdict::Jump(target) | Verdict::Goto(target) => {
                if depth >= MAX_DEPTH {
                    let rule = &table.chain(chain_name).map(|c| c.rules[index].clone());
                    if let Some(rule) = rule {
                        self.warn(
                            rule,
                            format!("more than {MAX_DEPTH} nested jumps (a loop?); stopped"),
                        );
                    }
                    return vec![(walk, Flow::Return)];
                }
                let goto = matches!(verdict, Verdict::Goto(_));
                let mut inner = walk;
                inner.calls.push(step.clone());
                let mut out = Vec::new();
                for (mut after, flow) in self.chain(inner, table, target, 0, depth + 1) {
                    after.calls.pop();
                    match flow {
                        Flow::Return if !goto => {
                            out.extend(self.chain(after, table, chain_name, index + 1, depth));
                        }
                        flow => out.push((after, flow)),
                    }
                }
                out
            }
        }
    }

    /// Looks the packet up in a verdict map.
    pub(super) fn lookup(
        &mut self,
        table: &Table,
        rule: &Rule,
        key: &[KeyPart],
        map: &MapRef,
        walk: &Walk,
    ) -> Option<Verdict> {
        let mut packet = Vec::new();
        for part in key {
            packet.push(match self.field(*part, walk) {
                Field::Known(value) => value,
                Field::Source => {
                    self.warn(
                        rule,
                        "a map keyed by the source address needs --from; assumed not found",
                    );
                    return None;
                }
                // No element of kube-proxy's maps is keyed by an ICMP packet's bytes.
                Field::Absent => return None,
                Field::SourcePort => {
                    self.warn(
                        rule,
                        "a map keyed by the source port cannot be looked up; assumed not found",
                    );
                    return None;
                }
            });
        }
        let elements: &[Element] = match map {
            MapRef::Inline(elements) => elements,
            MapRef::Named(name) => match table.sets.get(name) {
                Some(set) => &set.elements,
                None => {
                    self.warn(
                        rule,
                        format!("no map @{name} in table {}; assumed not found", table.name),
                    );
                    return None;
                }
            },
        };
        elements
            .iter()
            .find(|element| {
                element.key.len() == packet.len()
                    && element
                        .key
                        .iter()
                        .zip(&packet)
                        .all(|(value, field)| key_matches(value, field))
            })
            .and_then(|element| element.verdict.clone())
    }

    /// Runs the base chains of `hook`, in priority order.
    pub(super) fn hook(&mut self, walk: Walk, hook: Hook) -> Vec<Walk> {
        let mut bases: Vec<(i32, usize, &'r Table, &'r str, bool)> = Vec::new();
        for (index, table) in self.ruleset.tables.iter().enumerate() {
            if !table.family.covers(self.family) {
                continue;
            }
            for chain in &table.chains {
                if let Some(base) = chain.base
                    && base.hook == hook
                {
                    bases.push((base.priority, index, table, &chain.name, base.policy_accept));
                }
            }
        }
        bases.sort_by_key(|(priority, index, ..)| (*priority, *index));
        let mut walks = vec![walk];
        for (_, _, table, chain, policy_accept) in bases {
            let mut next = Vec::new();
            for walk in walks {
                if walk.end.is_some() {
                    next.push(walk);
                    continue;
                }
                for (mut after, flow) in self.chain(walk, table, chain, 0, 0) {
                    match flow {
                        Flow::Accept => {}
                        Flow::Return if policy_accept => {}
                        Flow::Return => {
                            after.end = Some(End::Drop(Hop {
                                table: table.name.clone(),
                                chain: chain.to_owned(),
                                line: table.chain(chain).map_or(0, |c| c.line),
                                rule: format!("{chain} policy DROP"),
                            }));
                        }
                        Flow::Drop(step) => after.end = Some(End::Drop(step)),
                        Flow::Reject(step) => after.end = Some(End::Reject(step)),
                    }
                    next.push(after);
                }
            }
            walks = next;
        }
        walks
    }

    /// Postrouting, and for each conditional mark, whether it would get the packet
    /// masqueraded.
    pub(super) fn postrouting(&mut self, walk: Walk) -> Vec<Walk> {
        let before = walk.clone();
        let mut out = self.hook(walk, Hook::Postrouting);
        for result in &mut out {
            if result.end.is_some() || result.masquerade.is_some() {
                continue;
            }
            for cond in &before.cond_marks {
                let mut trial = before.clone();
                trial.mark = (trial.mark & cond.and) ^ cond.xor;
                trial.cond_marks.clear();
                // Side walks must not split the weight or warn twice.
                let warnings = self.warnings.clone();
                let masqueraded = self
                    .hook(trial, Hook::Postrouting)
                    .into_iter()
                    .find_map(|w| w.masquerade);
                self.warnings = warnings;
                if let Some(by) = masqueraded {
                    result.cond_masquerade.push(Masquerade {
                        when: Some(cond.when.clone()),
                        why: why(&cond.step, Some(&cond.when)),
                        marked_by: Some(cond.step.clone()),
                        masqueraded_by: by,
                        endpoints: Vec::new(),
                    });
                }
            }
        }
        out
    }

    /// The whole walk of one new connection.
    pub(super) fn traverse(&mut self, walk: Walk) -> Vec<Walk> {
        let first = if self.options.local {
            Hook::Output
        } else {
            Hook::Prerouting
        };
        let mut done = Vec::new();
        for mut walk in self.hook(walk, first) {
            if walk.end.is_none()
                && !self.options.local
                && walk.dst.is_loopback()
                && !self.routes_to_loopback(walk.dst)
                && let Some((_, _, step)) = &walk.dnat
            {
                // The routing decision: a martian destination.
                self.martian = Some(walk.dst);
                walk.end = Some(End::Drop(step.clone()));
            }
            if walk.end.is_some() {
                done.push(walk);
                continue;
            }
            let local_destination = self.is_local(walk.dst);
            let mut walks = vec![walk];
            let hooks: &[Hook] = match (self.options.local, local_destination) {
                (true, _) => &[Hook::Postrouting],
                (false, true) => &[Hook::Input],
                (false, false) => &[Hook::Forward, Hook::Postrouting],
            };
            for hook in hooks {
                let mut next = Vec::new();
                for walk in walks {
                    if walk.end.is_some() {
                        next.push(walk);
                    } else if *hook == Hook::Postrouting {
                        next.extend(self.postrouting(walk));
                    } else {
                        next.extend(self.hook(walk, *hook));
                    }
                }
                walks = next;
            }
            done.extend(walks);
        }
        done
    }

    pub(super) fn start(&self) -> Walk {
        Walk {
            weight: 1.0,
            dst: self.options.to,
            dport: self.options.port,
            mark: 0,
            dnat: None,
            probability: None,
            masquerade: None,
            marked_by: None,
            cond_marks: Vec::new(),
            cond_masquerade: Vec::new(),
            path: Vec::new(),
            calls: Vec::new(),
            end: None,
        }
    }
}
