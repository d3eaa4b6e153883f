//! Writing a reply: the prepared records of a [`zone::Answer`](crate::zone::Answer) behind a
//! pointer to the question, with name compression, respelling and the OPT record.

use smallvec::SmallVec;

use super::header::FLAG_AA;
use super::parse::{MAX_POINTERS, skip_name};
use super::{
    Edns, FLAG_CD, FLAG_QR, FLAG_RD, FLAG_TC, HEADER_LEN, OPCODE_BITS, RCODE_BITS, Request, reply,
};
use crate::codes::{rcode, rtype};
use crate::zone::rrset::expand_name;
use crate::zone::{Answer, Owner, Run, ServedZone};

/// How many label positions a reply keeps as compression targets: enough for the names of
/// the largest answers that fit in a UDP reply; past it, names are written whole.
const COMPRESSION_TARGETS: usize = 192;

/// Name compression (RFC 1035 §4.1.4) for a reply being written: where the labels of the
/// names written so far start, so that a later name can end in a pointer to one of them.
/// A fixed table on the stack: compressing allocates nothing.
struct Compression {
    at: [u16; COMPRESSION_TARGETS],
    len: usize,
}

impl Compression {
    fn new() -> Self {
        Self {
            at: [0; COMPRESSION_TARGETS],
            len: 0,
        }
    }

    /// Keeps the labels of the name at `start` in `out` written out in full (up to its end
    /// or its first pointer) as targets.
    fn record(&mut self, out: &[u8], mut start: usize) {
        while let Some(&len) = out.get(start) {
            if len == 0 || len > 63 || start >= 0x4000 || self.len == COMPRESSION_TARGETS {
                return;
            }
            self.at[self.len] = start as u16;
            self.len += 1;
            start += 1 + usize::from(len);
        }
    }

    /// The name written whole at the end of `out`, from `start`: its longest suffix that
    /// an earlier name has is replaced with a pointer to it.
    fn compress(&mut self, out: &mut Vec<u8>, start: usize) {
        let mut suffix = start;
        while let Some(&len) = out.get(suffix) {
            if len == 0 || len > 63 {
                break;
            }
            if let Some(&target) = self.at[..self.len]
                .iter()
                .find(|&&target| same_name(out, usize::from(target), &out[suffix..]))
            {
                out.truncate(suffix);
                out.extend_from_slice(&(0xc000 | target).to_be_bytes());
                break;
            }
            suffix += 1 + usize::from(len);
        }
        self.record(out, start);
    }
}

/// Whether the name at `at` in `out` (its pointers followed) is `name` (whole, no pointer),
/// byte for byte: the spelling a pointer gives is the spelling written.
fn same_name(out: &[u8], mut at: usize, name: &[u8]) -> bool {
    let mut i = 0;
    let mut jumps = 0;
    loop {
        let Some(&len) = out.get(at) else {
            return false;
        };
        if len >= 0xc0 {
            jumps += 1;
            let Some(&low) = out.get(at + 1) else {
                return false;
            };
            if jumps > MAX_POINTERS {
                return false;
            }
            at = (usize::from(len & 0x3f) << 8) | usize::from(low);
            continue;
        }
        if name.get(i) != Some(&len) {
            return false;
        }
        if len == 0 {
            return true;
        }
        let n = usize::from(len);
        if out.get(at + 1..at + 1 + n) != name.get(i + 1..i + 1 + n) {
            return false;
        }
        at += 1 + n;
        i += 1 + n;
    }
}

/// A reply being written into a caller's buffer.
struct Writer<'o> {
    out: &'o mut Vec<u8>,
    counts: [u16; 4],
    names: Compression,
}

impl<'o> Writer<'o> {
    fn new(out: &'o mut Vec<u8>, question: Option<&[u8]>) -> Self {
        out.clear();
        out.extend_from_slice(&[0; HEADER_LEN]);
        let mut counts = [0; 4];
        let mut names = Compression::new();
        if let Some(question) = question {
            out.extend_from_slice(question);
            counts[0] = 1;
            names.record(out, HEADER_LEN);
        }
        Self { out, counts, names }
    }

    /// Writes one run into `section` (1 answer, 2 authority, 3 additional); with `shuffle`
    /// (the *loadbalance* plugin), A, AAAA and MX records go out in a random order.
    fn run(&mut self, section: usize, run: &Run<'_>, respell: Option<&Respell<'_>>, shuffle: bool) {
        self.run_within(section, run, respell, shuffle, usize::MAX);
    }

    /// [`run`](Self::run), keeping the message within `budget` bytes: an RRset (records in a
    /// row with one owner and type) that would pass it is left out whole, and so is every
    /// one after it. Whether all of the run went in.
    fn run_within(
        &mut self,
        section: usize,
        run: &Run<'_>,
        respell: Option<&Respell<'_>>,
        shuffle: bool,
        budget: usize,
    ) -> bool {
        let data = &run.data[..];
        let mut records: SmallVec<[(usize, usize, usize); 16]> = SmallVec::new();
        let mut at = 0;
        while at < data.len() {
            let rr_start = match run.owner {
                Owner::Embedded => match skip_name(data, at) {
                    Some(end) => end,
                    None => break,
                },
                Owner::Question | Owner::Name(_) => at,
            };
            let Some(fixed) = data.get(rr_start..rr_start + 10) else {
                break;
            };
            let end = rr_start + 10 + usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
            if end > data.len() {
                break;
            }
            records.push((at, rr_start, end));
            at = end;
        }
        if shuffle && records.len() > 1 {
            let (_, rr_start, _) = records[0];
            let rtype = u16::from_be_bytes([data[rr_start], data[rr_start + 1]]);
            if matches!(rtype, rtype::A | rtype::AAAA | rtype::MX) {
                fastrand::shuffle(&mut records);
            }
        }
        let mut named_at: Option<usize> = None;
        // Where the RRset being written began: its offset, count and (owner, type).
        let mut set_start = (self.out.len(), self.counts[section]);
        let mut set_key: Option<(&[u8], &[u8])> = None;
        for (owner_at, rr_start, end) in records {
            let key = (&data[owner_at..rr_start], &data[rr_start..rr_start + 2]);
            if set_key != Some(key) {
                set_start = (self.out.len(), self.counts[section]);
                set_key = Some(key);
            }
            match &run.owner {
                Owner::Question => self.out.extend_from_slice(&[0xc0, HEADER_LEN as u8]),
                Owner::Name(name) => match named_at {
                    Some(offset) if offset < 0x4000 => self
                        .out
                        .extend_from_slice(&(0xc000 | offset as u16).to_be_bytes()),
                    _ => {
                        let written = self.out.len();
                        named_at = Some(written);
                        self.out.extend_from_slice(name);
                        self.names.compress(self.out, written);
                    }
                },
                Owner::Embedded => {
                    let written = self.out.len();
                    if expand_name(&data[owner_at..rr_start], run.holder, self.out).is_none() {
                        self.out.extend_from_slice(&data[owner_at..rr_start]);
                    }
                    if let Some(respell) = respell {
                        respell.apply(&mut self.out[written..]);
                    }
                    self.names.compress(self.out, written);
                }
            }
            let rr_type = u16::from_be_bytes([data[rr_start], data[rr_start + 1]]);
            let rdata_at = self.out.len() + 10;
            // An SRV or PTR target is a stored name: written whole, and RDLENGTH with it.
            let target_at = match rr_type {
                rtype::SRV => Some(rr_start + 16),
                rtype::PTR => Some(rr_start + 10),
                _ => None,
            };
            let stored_target = target_at.and_then(|at| Some((at, data.get(at..end)?)));
            match stored_target {
                Some((target_at, target)) => {
                    self.out.extend_from_slice(&data[rr_start..target_at]);
                    if expand_name(target, run.holder, self.out).is_none() {
                        self.out.extend_from_slice(target);
                    }
                    let rdlen = (self.out.len() - rdata_at) as u16;
                    self.out[rdata_at - 2..rdata_at].copy_from_slice(&rdlen.to_be_bytes());
                }
                _ => self.out.extend_from_slice(&data[rr_start..end]),
            }
            if let Some(respell) = respell {
                let target_at = match rr_type {
                    rtype::SRV => Some(rdata_at + 6),
                    rtype::NS => Some(rdata_at),
                    _ => None,
                };
                if let Some(target_at) = target_at {
                    respell.apply(&mut self.out[target_at..]);
                }
            }
            match rr_type {
                // The RDATA names RFC 3597 §4 lets a server compress, each the end of its
                // RDATA; RDLENGTH follows.
                rtype::NS | rtype::CNAME | rtype::PTR | rtype::MX => {
                    let name_at = if rr_type == rtype::MX {
                        rdata_at + 2
                    } else {
                        rdata_at
                    };
                    if name_at < self.out.len() {
                        self.names.compress(self.out, name_at);
                        let rdlen = (self.out.len() - rdata_at) as u16;
                        self.out[rdata_at - 2..rdata_at].copy_from_slice(&rdlen.to_be_bytes());
                    }
                }
                // An SRV target is never compressed (RFC 2782), but later names may point
                // at it.
                rtype::SRV => self.names.record(self.out, rdata_at + 6),
                _ => {}
            }
            self.counts[section] += 1;
            if self.out.len() > budget {
                self.out.truncate(set_start.0);
                self.counts[section] = set_start.1;
                return false;
            }
        }
        true
    }

    /// The zone's SOA in the authority section, owned by the zone as spelled in the question.
    fn negative_soa(&mut self, zone_offset: usize, zone: &ServedZone) {
        let soa = zone.soa();
        let (mname, rname) = zone.soa_prefixes();
        let pointer = (0xc000 | (HEADER_LEN + zone_offset) as u16).to_be_bytes();
        self.out.extend_from_slice(&pointer);
        // MNAME and RNAME: their labels in front of the zone (`ns.dns` and `hostmaster` for
        // the cluster zone), then a pointer to the zone as asked.
        let rdlen = mname.len() + 2 + rname.len() + 2 + 20;
        crate::zone::rrset::write_rr_header(self.out, rtype::SOA, soa.ttl, rdlen);
        self.out.extend_from_slice(mname);
        self.out.extend_from_slice(&pointer);
        self.out.extend_from_slice(rname);
        self.out.extend_from_slice(&pointer);
        self.out.extend_from_slice(&soa.tail());
        self.counts[2] += 1;
    }

    fn opt(&mut self, edns: Option<&Edns>, rcode: u16) {
        let Some(edns) = edns else { return };
        self.out.push(0);
        self.out.extend_from_slice(&rtype::OPT.to_be_bytes());
        self.out.extend_from_slice(&edns.payload.to_be_bytes());
        let extended = u32::from(rcode >> 4) << 24;
        let dnssec_ok = if edns.dnssec_ok { 0x8000 } else { 0 };
        self.out
            .extend_from_slice(&(extended | dnssec_ok).to_be_bytes());
        self.out.extend_from_slice(&[0, 0]);
        self.counts[3] += 1;
    }

    fn header(
        &mut self,
        id: u16,
        request_flags: u16,
        authoritative: bool,
        truncated: bool,
        rcode: u16,
    ) {
        let mut flags =
            FLAG_QR | (request_flags & (OPCODE_BITS | FLAG_RD | FLAG_CD)) | (rcode & RCODE_BITS);
        if authoritative {
            flags |= FLAG_AA;
        }
        if truncated {
            flags |= FLAG_TC;
        }
        self.out[0..2].copy_from_slice(&id.to_be_bytes());
        self.out[2..4].copy_from_slice(&flags.to_be_bytes());
        for (index, count) in self.counts.iter().enumerate() {
            self.out[4 + index * 2..6 + index * 2].copy_from_slice(&count.to_be_bytes());
        }
    }
}

/// Rewrites a name ending in the zone's lower-case spelling to the question's spelling.
struct Respell<'r> {
    lower: &'r [u8],
    asked: &'r [u8],
}

impl Respell<'_> {
    fn apply(&self, name: &mut [u8]) {
        let Some(end) = skip_name(name, 0) else {
            return;
        };
        if end < self.lower.len() || name[end - 1] != 0 {
            return;
        }
        let start = end - self.lower.len();
        if crate::name::suffix_offset(&name[..end], self.lower) == Some(start)
            && &name[start..end] == self.lower
        {
            name[start..end].copy_from_slice(self.asked);
        }
    }
}

/// Writes the reply to `request` carrying `answer` from `zone`, at most `limit` bytes:
/// when it does not fit, the additional section keeps the glue that fits, then the answer
/// and authority go, with TC set (the client retries over TCP). `shuffle` is the *loadbalance* plugin.
pub fn write_answer(
    request: &Request<'_>,
    answer: &Answer<'_>,
    zone: &ServedZone,
    limit: usize,
    shuffle: bool,
    out: &mut Vec<u8>,
) {
    let rcode = match answer.rcode {
        crate::zone::Rcode::NoError => rcode::NOERROR,
        crate::zone::Rcode::NxDomain => rcode::NXDOMAIN,
    };
    let origin = zone.origin().as_bytes();
    let zone_offset = request.question.len - origin.len();
    let asked = &request.bytes[HEADER_LEN + zone_offset..HEADER_LEN + request.question.len];
    let respell = (asked != origin).then_some(Respell {
        lower: origin,
        asked,
    });
    // Room for the OPT record, which goes last.
    let opt_len = if request.edns.is_some() { 11 } else { 0 };
    for truncated in [false, true] {
        let mut writer = Writer::new(out, Some(request.question_bytes()));
        if !truncated {
            for run in &answer.answer {
                writer.run(1, run, respell.as_ref(), shuffle);
            }
            if answer.is_negative() {
                writer.negative_soa(zone_offset, zone);
            }
            // Glue is optional: as much of it as fits, whole RRsets, without TC (RFC 2181 §9).
            let budget = limit.saturating_sub(opt_len);
            for run in &answer.additional {
                if !writer.run_within(3, run, respell.as_ref(), shuffle, budget) {
                    break;
                }
            }
        }
        writer.opt(request.edns.as_ref(), rcode);
        writer.header(request.id, request.flags, true, truncated, rcode);
        if out.len() <= limit || truncated {
            return;
        }
    }
}

/// A reply of records owned by the question's name (the *hosts*, *any* and *chaos* plugins):
/// the question echoed, each record behind a pointer to it, the OPT record when the query
/// had one. Written straight into the caller's buffer; nothing is allocated.
pub struct QuestionAnswers<'o, 'r> {
    writer: Writer<'o>,
    request: &'r Request<'r>,
}

impl<'o, 'r> QuestionAnswers<'o, 'r> {
    /// Starts the reply to `request` in `out`.
    pub fn new(request: &'r Request<'r>, out: &'o mut Vec<u8>) -> Self {
        Self {
            writer: Writer::new(out, Some(request.question_bytes())),
            request,
        }
    }

    /// One answer record: TYPE, CLASS, TTL and RDATA, owned by the question's name.
    pub fn answer(&mut self, rtype: u16, class: u16, ttl: u32, rdata: &[u8]) {
        self.writer.out.extend_from_slice(&[0xc0, HEADER_LEN as u8]);
        self.writer.out.extend_from_slice(&rtype.to_be_bytes());
        self.writer.out.extend_from_slice(&class.to_be_bytes());
        self.writer.out.extend_from_slice(&ttl.to_be_bytes());
        self.writer
            .out
            .extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        self.writer.out.extend_from_slice(rdata);
        self.writer.counts[1] += 1;
    }

    /// Ends the reply with `rcode`; one that is larger than `limit` goes out without its
    /// records and with TC set (the client asks again over TCP).
    pub fn finish(mut self, rcode: u16, authoritative: bool, limit: usize) {
        let opt_len = if self.request.edns.is_some() { 11 } else { 0 };
        let truncated = self.writer.out.len() + opt_len > limit;
        if truncated {
            let end = HEADER_LEN + self.request.question.len + 4;
            self.writer.out.truncate(end);
            self.writer.counts = [1, 0, 0, 0];
        }
        self.writer.opt(self.request.edns.as_ref(), rcode);
        self.writer.header(
            self.request.id,
            self.request.flags,
            authoritative,
            truncated,
            rcode,
        );
    }
}

/// Lowers the UDP payload size the OPT record of `message` (a query) advertises to at most
/// `size` (the *bufsize* plugin on a query sent upstream). A message without OPT, or one
/// that does not parse, is left as it is.
pub fn clamp_payload(message: &mut [u8], size: u16) {
    let Ok(records) = reply::records(message) else {
        return;
    };
    if let Some(opt) = records
        .iter()
        .find(|record| record.section == 3 && record.rtype == rtype::OPT)
    {
        let at = opt.fixed + 2;
        let payload = u16::from_be_bytes([message[at], message[at + 1]]);
        if payload > size {
            message[at..at + 2].copy_from_slice(&size.to_be_bytes());
        }
    }
}

/// Writes a reply with `rcode` and no records: the question echoed when there is one, the
/// OPT record when the query had one. Not authoritative.
pub fn write_rcode(request: &Request<'_>, rcode: u16, out: &mut Vec<u8>) {
    let mut writer = Writer::new(out, Some(request.question_bytes()));
    writer.opt(request.edns.as_ref(), rcode);
    writer.header(request.id, request.flags, false, false, rcode);
}

/// The query `query` (one question) as it would have been asked for `name` (wire format,
/// uncompressed): its header as it is (ID, flags), its question's type and class, and its
/// OPT record byte for byte (EDNS options included). Any other record after the question (a
/// query has none in practice) is left out: a compression pointer in it would point past a
/// name of another length. `None` when `query` does not read.
pub(crate) fn query_for_name(query: &[u8], name: &[u8]) -> Option<Vec<u8>> {
    let header = super::Header::read(query)?;
    if header.counts[0] != 1 {
        return None;
    }
    let name_end = super::question_name_end(query)?;
    let fixed = query.get(name_end..name_end + 4)?;
    let [_, answers, authority, additional] = header.counts;
    let mut opt = None;
    reply::each_record_after(
        query,
        name_end + 4,
        [answers, authority, additional],
        |record| {
            if record.section == 3 && record.rtype == rtype::OPT && opt.is_none() {
                opt = Some(record.start..record.end);
            }
        },
    )
    .ok()?;
    let opt = opt.map_or(&[][..], |opt| &query[opt]);
    let mut out = Vec::with_capacity(HEADER_LEN + name.len() + fixed.len() + opt.len());
    out.extend_from_slice(&query[..4]);
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, u8::from(!opt.is_empty())]);
    out.extend_from_slice(name);
    out.extend_from_slice(fixed);
    out.extend_from_slice(opt);
    Some(out)
}

/// The names in the RDATA of `rtype`, for copying a record into another message: for each
/// name in order, `(fixed, compressed)`, the bytes before it and whether it may be written
/// with a pointer (RFC 3597 §4: only RFC 1035's types). What follows the last name (SOA's
/// numbers) is copied as it is. `None`: no name, the RDATA is copied as it is.
fn rdata_names(rtype: u16) -> Option<&'static [(usize, bool)]> {
    Some(match rtype {
        // NS, MD, MF, CNAME, MB, MG, MR, PTR; DNAME.
        2..=5 | 7..=9 | 12 => &[(0, true)],
        39 => &[(0, false)],
        // MX; AFSDB, RT, KX.
        15 => &[(2, true)],
        18 | 21 | 36 => &[(2, false)],
        // SOA (its serial and timers follow), MINFO; RP.
        6 | 14 => &[(0, true), (0, true)],
        17 => &[(0, false), (0, false)],
        // PX; SRV.
        26 => &[(2, false), (0, false)],
        33 => &[(6, false)],
        _ => return None,
    })
}

/// Where the value of `record` (of `message`) is, the name a *rewrite* `answer value` rule
/// reads and changes (CoreDNS's `getRecordValueForRewrite`): the target of a CNAME, DNAME,
/// PTR, NS, MX or SRV, an SOA's MNAME, a NAPTR's replacement. `None` for other types, or a
/// NAPTR whose RDATA does not read.
pub(crate) fn value_name_at(message: &[u8], record: &reply::RecordAt) -> Option<usize> {
    let rdata = record.fixed + 10;
    match record.rtype {
        rtype::NAPTR => Some(rdata + naptr_replacement(message.get(rdata..record.end)?)?),
        rtype::NS
        | rtype::CNAME
        | rtype::SOA
        | rtype::PTR
        | rtype::MX
        | rtype::SRV
        | rtype::DNAME => Some(rdata + rdata_names(record.rtype)?[0].0),
        _ => None,
    }
}

/// Where a NAPTR's replacement name starts in its RDATA (RFC 3403 §4.1): after ORDER,
/// PREFERENCE and three character strings (FLAGS, SERVICES, REGEXP).
fn naptr_replacement(rdata: &[u8]) -> Option<usize> {
    let mut at = 4;
    for _ in 0..3 {
        at += 1 + usize::from(*rdata.get(at)?);
    }
    (at < rdata.len()).then_some(at)
}

/// The changes [`Rebuilt::copy_edited`] makes to a record it copies: its owner, its value
/// ([`value_name_at`]), both whole wire names, and its TTL, where given.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Edit<'e> {
    pub(crate) owner: Option<&'e [u8]>,
    pub(crate) value: Option<&'e [u8]>,
    pub(crate) ttl: Option<u32>,
}

/// The name at `at` in `message` whole (its pointers followed); `None` where it does not
/// read.
pub(crate) fn name_at(message: &[u8], at: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    append_name(message, at, &mut out)?;
    Some(out)
}

/// Appends the name at `at` in `message` whole (its pointers followed, each only backwards)
/// to `out`: the offset just past the name in `message`, or `None` for a name that does not
/// read or is longer than 255 bytes (`out` is then cut back).
fn append_name(message: &[u8], mut at: usize, out: &mut Vec<u8>) -> Option<usize> {
    let start = out.len();
    let mut end = None;
    let mut limit = at;
    let appended = loop {
        let Some(&len) = message.get(at) else {
            break None;
        };
        match len {
            0 => {
                out.push(0);
                break (out.len() - start <= crate::name::MAX_NAME_LEN)
                    .then(|| end.unwrap_or(at + 1));
            }
            1..=63 => {
                let Some(label) = message.get(at..at + 1 + usize::from(len)) else {
                    break None;
                };
                out.extend_from_slice(label);
                at += label.len();
                if out.len() - start > crate::name::MAX_NAME_LEN {
                    break None;
                }
            }
            0xc0..=0xff => {
                let Some(&low) = message.get(at + 1) else {
                    break None;
                };
                end.get_or_insert(at + 2);
                let target = usize::from(u16::from_be_bytes([len & 0x3f, low]));
                if target >= limit {
                    break None;
                }
                limit = target;
                at = target;
            }
            _ => break None,
        }
    };
    if appended.is_none() {
        out.truncate(start);
    }
    appended
}

/// A message written from the records of others (each found with [`reply::records`]): their
/// names (RDATA names of the types that hold them too) written out and compressed again
/// against this message, so that no pointer is left aimed into the message a record came
/// from. Every read of another message is bounds-checked: `None` where one does not read.
pub(crate) struct Rebuilt {
    out: Vec<u8>,
    names: Compression,
    counts: [u16; 4],
    /// The OPT record [`finish`](Self::finish) writes last: the query's EDNS and the rcode
    /// (a reply made by [`reply_to`](Self::reply_to)).
    opt: Option<(Edns, u16)>,
}

impl Rebuilt {
    /// A message with `header`'s ID and flags (its first four bytes) and the question
    /// section `question` (of `questions` questions), whose names point nowhere but into
    /// themselves (it starts where it stood).
    pub(crate) fn new(
        header: &[u8],
        question: &[u8],
        questions: u16,
        capacity: usize,
    ) -> Option<Self> {
        let mut out = Vec::with_capacity(capacity);
        out.extend_from_slice(header.get(..4)?);
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(question);
        let mut names = Compression::new();
        names.record(&out, HEADER_LEN);
        Some(Self {
            out,
            names,
            counts: [questions, 0, 0, 0],
            opt: None,
        })
    }

    /// The reply to `request`, to be filled with records: its ID, its opcode, RD and CD, its
    /// question as it was asked (letter case included), `rcode` and AA when `authoritative`.
    /// With EDNS in the query, an OPT record goes last carrying the rcode's extended bits;
    /// [`reply::fit_for_client`] writes the one the client gets.
    pub(crate) fn reply_to(request: &Request<'_>, authoritative: bool, rcode: u16) -> Self {
        let question = request.question_bytes();
        let mut flags =
            FLAG_QR | (request.flags & (OPCODE_BITS | FLAG_RD | FLAG_CD)) | (rcode & RCODE_BITS);
        if authoritative {
            flags |= FLAG_AA;
        }
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(&request.id.to_be_bytes());
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(question);
        let mut names = Compression::new();
        names.record(&out, HEADER_LEN);
        Self {
            out,
            names,
            counts: [1, 0, 0, 0],
            opt: request.edns.map(|edns| (edns, rcode)),
        }
    }

    /// Writes `record` (one record in wire format standing alone, as an encoder of records
    /// gives it) into `section` (1 answer, 2 authority, 3 additional), its names compressed
    /// against the message. `None`, and nothing written, when it does not read as one record.
    pub(crate) fn push(&mut self, record: &[u8], section: u8) -> Option<()> {
        let mut found = None;
        reply::each_record_after(record, 0, [1, 0, 0], |at| found = Some(at)).ok()?;
        let found = found.filter(|at| at.end == record.len())?;
        self.copy(record, &found, section)
    }

    /// The reply without the OPT record [`reply_to`](Self::reply_to) would write.
    pub(crate) fn without_opt(mut self) -> Self {
        self.opt = None;
        self
    }

    /// [`push`](Self::push) of a record of the zone-file model (what *file* and *template*
    /// answer with, and a zone transfer sends), encoded by its own encoder.
    pub(crate) fn push_record(
        &mut self,
        record: &hickory_proto::rr::Record,
        section: u8,
    ) -> Option<()> {
        use hickory_proto::serialize::binary::BinEncodable;
        self.push(&record.to_bytes().ok()?, section)
    }

    /// The flag word.
    pub(crate) fn flags(&self) -> u16 {
        u16::from_be_bytes([self.out[2], self.out[3]])
    }

    /// Sets the flag word.
    pub(crate) fn set_flags(&mut self, flags: u16) {
        self.out[2..4].copy_from_slice(&flags.to_be_bytes());
    }

    /// Whether the name at `at` in `from` is the first question's (ASCII case aside).
    pub(crate) fn is_question_name(&mut self, from: &[u8], at: usize) -> Option<bool> {
        let start = self.out.len();
        append_name(from, at, &mut self.out)?;
        let question_end = super::question_name_end(&self.out[..start]);
        let same = question_end
            .is_some_and(|end| self.out[start..].eq_ignore_ascii_case(&self.out[HEADER_LEN..end]));
        self.out.truncate(start);
        Some(same)
    }

    /// Writes an answer: a CNAME from the first question's name to the name at `at` in
    /// `from`, with `ttl`.
    pub(crate) fn cname_to(&mut self, from: &[u8], at: usize, ttl: u32) -> Option<()> {
        let out = &mut self.out;
        // Nothing is recorded for compression before the name has been read whole.
        let rdlen_at = out.len() + 10;
        out.extend_from_slice(&(0xc000 | HEADER_LEN as u16).to_be_bytes());
        out.extend_from_slice(&rtype::CNAME.to_be_bytes());
        out.extend_from_slice(&crate::codes::class::IN.to_be_bytes());
        out.extend_from_slice(&ttl.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        let target = out.len();
        if append_name(from, at, out).is_none() {
            out.truncate(rdlen_at - 10);
            return None;
        }
        self.names.compress(out, target);
        let rdlen = (out.len() - target) as u16;
        out[rdlen_at..rdlen_at + 2].copy_from_slice(&rdlen.to_be_bytes());
        self.counts[1] += 1;
        Some(())
    }

    /// Copies `record` of `from` into `section` (1 answer, 2 authority, 3 additional);
    /// nothing of it where it does not read.
    pub(crate) fn copy(
        &mut self,
        from: &[u8],
        record: &reply::RecordAt,
        section: u8,
    ) -> Option<()> {
        self.copy_edited(from, record, section, &Edit::default())
    }

    /// [`copy`](Self::copy) with the changes of `edit` made on the way.
    pub(crate) fn copy_edited(
        &mut self,
        from: &[u8],
        record: &reply::RecordAt,
        section: u8,
        edit: &Edit<'_>,
    ) -> Option<()> {
        let mark = self.mark();
        if self.copy_record(from, record, edit).is_none() {
            self.back_to(mark);
            return None;
        }
        self.counts[usize::from(section.clamp(1, 3))] += 1;
        Some(())
    }

    /// Copies every record of `records` (of `from`) that is in `section` there, into
    /// `section`: all of them, or none where one does not read.
    pub(crate) fn copy_section(
        &mut self,
        from: &[u8],
        records: &[reply::RecordAt],
        section: u8,
    ) -> Option<()> {
        let mark = self.mark();
        for record in records.iter().filter(|record| record.section == section) {
            if self.copy(from, record, section).is_none() {
                self.back_to(mark);
                return None;
            }
        }
        Some(())
    }

    /// Where the message stands, to go back to.
    fn mark(&self) -> (usize, usize, [u16; 4]) {
        (self.out.len(), self.names.len, self.counts)
    }

    /// Back to `mark`: what was written since, and the compression targets in it, gone.
    fn back_to(&mut self, (len, names, counts): (usize, usize, [u16; 4])) {
        self.out.truncate(len);
        self.names.len = names;
        self.counts = counts;
    }

    fn copy_record(
        &mut self,
        from: &[u8],
        record: &reply::RecordAt,
        edit: &Edit<'_>,
    ) -> Option<()> {
        let out = &mut self.out;
        let owner = out.len();
        match edit.owner {
            Some(name) => out.extend_from_slice(name),
            None => _ = append_name(from, record.start, out)?,
        }
        self.names.compress(out, owner);
        out.extend_from_slice(from.get(record.fixed..record.fixed + 8)?);
        if let Some(ttl) = edit.ttl {
            let at = out.len() - 4;
            out[at..].copy_from_slice(&ttl.to_be_bytes());
        }
        let rdlen_at = out.len();
        out.extend_from_slice(&[0, 0]);
        let rdata = rdlen_at + 2;
        let mut at = record.fixed + 10;
        // The value a rule may change is the first name of the RDATA (NAPTR's is its last,
        // never compressed, so in the rest copied below).
        let mut value = edit.value.filter(|_| value_name_at(from, record).is_some());
        if let Some(layout) = rdata_names(record.rtype) {
            for &(fixed, compressed) in layout {
                out.extend_from_slice(from.get(at..at + fixed)?);
                let name = out.len();
                at = match value.take() {
                    Some(value) => {
                        out.extend_from_slice(value);
                        skip_name(from, at + fixed)?
                    }
                    None => append_name(from, at + fixed, out)?,
                };
                if compressed {
                    self.names.compress(out, name);
                }
            }
        }
        // The rest (all of it for a type without names) as it is; a name past the end of
        // the RDATA is a broken record.
        let rest = from.get(at..record.end)?;
        match value {
            Some(value) => {
                let replacement = naptr_replacement(rest)?;
                out.extend_from_slice(&rest[..replacement]);
                out.extend_from_slice(value);
            }
            None => out.extend_from_slice(rest),
        }
        let rdlen = u16::try_from(out.len() - rdata).ok()?;
        out[rdlen_at..rdlen_at + 2].copy_from_slice(&rdlen.to_be_bytes());
        Some(())
    }

    /// The message, its counts set.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        if let Some((edns, rcode)) = self.opt.take() {
            let mut writer = Writer {
                out: &mut self.out,
                counts: self.counts,
                names: Compression::new(),
            };
            writer.opt(Some(&edns), rcode);
            self.counts = writer.counts;
        }
        for (index, count) in self.counts.iter().enumerate() {
            self.out[4 + index * 2..6 + index * 2].copy_from_slice(&count.to_be_bytes());
        }
        self.out
    }
}

/// The reply `found` (for one question) as the reply to the question of `query`: `found`'s
/// header, `query`'s question as it was asked (letter case included), and when `cname` and
/// the first answer's owner is another name, a CNAME from the question to it (with that
/// record's TTL) ahead of `found`'s records, all of them copied ([`Rebuilt`]). `None` when
/// either message does not read.
pub(crate) fn reply_for_question(found: &[u8], query: &[u8], cname: bool) -> Option<Vec<u8>> {
    let question_end = super::question_name_end(query)? + 4;
    let question = query.get(HEADER_LEN..question_end)?;
    let records = reply::records(found).ok()?;
    let capacity = found.len() + 2 * question.len() + 16;
    let mut rebuilt = Rebuilt::new(found, question, 1, capacity)?;
    if cname
        && let Some(first) = records.iter().find(|record| record.section == 1)
        && !rebuilt.is_question_name(found, first.start)?
    {
        rebuilt.cname_to(found, first.start, first.ttl)?;
    }
    for record in &records {
        rebuilt.copy(found, record, record.section)?;
    }
    Some(rebuilt.finish())
}

/// A query of our own (a probe, a health check, a page's question): ID `id`, the flag word
/// `flags`, one question of `name` (wire format, uncompressed) `qtype` in class IN, nothing
/// else.
pub fn write_query(id: u16, flags: u16, name: &[u8], qtype: u16) -> Vec<u8> {
    let mut query = Vec::with_capacity(HEADER_LEN + name.len() + 4);
    query.extend_from_slice(&id.to_be_bytes());
    query.extend_from_slice(&flags.to_be_bytes());
    query.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    query.extend_from_slice(name);
    query.extend_from_slice(&qtype.to_be_bytes());
    query.extend_from_slice(&crate::codes::class::IN.to_be_bytes());
    query
}

/// The *loadbalance* plugin on a reply from elsewhere (CoreDNS `roundRobin`, per section):
/// CNAMEs first, then other records, then the A and AAAA records shuffled, then MX shuffled
/// (an OPT record last). Rebuilt ([`Rebuilt`]), since moving compressed records in place could
/// leave a pointer aimed at a name that now comes later. `None` when there is nothing to
/// shuffle (or the message does not read).
pub fn shuffled(message: &[u8]) -> Option<Vec<u8>> {
    let records = reply::records(message).ok()?;
    let shufflable =
        |record: &&reply::RecordAt| matches!(record.rtype, rtype::A | rtype::AAAA | rtype::MX);
    let many = |section: u8| {
        records
            .iter()
            .filter(|record| record.section == section)
            .filter(shufflable)
            .count()
            > 1
    };
    if !(1..=3).any(many) {
        return None;
    }
    let question_end = reply::question_end(message).ok()?;
    let [questions, ..] = reply::counts(message).ok()?;
    let question = message.get(HEADER_LEN..question_end)?;
    let mut out = Rebuilt::new(message, question, questions, message.len() + 16)?;
    for section in 1..=3 {
        // CNAMEs, the rest, addresses, MX, OPT.
        let mut groups: [SmallVec<[reply::RecordAt; 8]>; 5] = Default::default();
        for record in records.iter().filter(|record| record.section == section) {
            let group = match record.rtype {
                rtype::CNAME => 0,
                rtype::A | rtype::AAAA => 2,
                rtype::MX => 3,
                rtype::OPT => 4,
                _ => 1,
            };
            groups[group].push(*record);
        }
        fastrand::shuffle(&mut groups[2]);
        fastrand::shuffle(&mut groups[3]);
        for record in groups.iter().flatten() {
            out.copy(message, record, section)?;
        }
    }
    Some(out.finish())
}

/// Writes the reply to a message [`Request::parse`] rejected with [`Malformed::Reply`].
pub fn write_malformed(id: u16, flags: u16, rcode: u16, out: &mut Vec<u8>) {
    let mut writer = Writer::new(out, None);
    writer.header(id, flags, false, false, rcode);
}
