//! The plugin's answer to one question: its rcode and its runs of records, in wire format.

use std::borrow::Cow;

use smallvec::SmallVec;

use super::rrset::RrSet;

/// The rcode of an authoritative answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rcode {
    /// NOERROR: records, or NODATA when the answer section is empty.
    NoError,
    /// NXDOMAIN: the name does not exist.
    NxDomain,
}

/// Who owns the records of a [`Run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner<'a> {
    /// The name in the question (written as a pointer to it, so in the query's spelling).
    Question,
    /// Another name, in wire format.
    Name(Cow<'a, [u8]>),
    /// The data holds whole records, each with its owner.
    Embedded,
}

/// A run of records: `count` records that share an owner, in wire format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run<'a> {
    /// Who owns them.
    pub owner: Owner<'a>,
    /// How many records `data` holds.
    pub count: u16,
    /// TYPE CLASS TTL RDLENGTH RDATA per record (owner first when [`Owner::Embedded`]).
    /// SRV and PTR targets and embedded owners are stored names: whole, or ending in a
    /// pointer into `holder` (see [`rrset`]'s "names stored once").
    pub data: RunData<'a>,
    /// The name that held the records (lower-case wire), which the pointers of their
    /// stored names point into; empty for records built for the question.
    pub holder: &'a [u8],
}

/// The bytes of a [`Run`]: the zone's own, or records made for the question — in place when
/// they are short (one address, one PTR), so that answering them does not allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunData<'a> {
    /// Bytes the snapshot holds.
    Borrowed(&'a [u8]),
    /// Records made for the question.
    Owned(Vec<u8>),
    /// A short record made for the question.
    Inline(InlineRecord),
}

impl std::ops::Deref for RunData<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Self::Borrowed(bytes) => bytes,
            Self::Owned(bytes) => bytes,
            Self::Inline(record) => record.as_bytes(),
        }
    }
}

/// Up to [`InlineRecord::CAPACITY`] bytes held in place.
#[derive(Clone)]
pub struct InlineRecord {
    len: u8,
    bytes: [u8; InlineRecord::CAPACITY],
}

impl InlineRecord {
    /// The most bytes one holds: a record header, a PTR target's first label (at most 63
    /// bytes, and 40 for a dashed IPv6 address) and a pointer.
    pub const CAPACITY: usize = 80;

    pub(super) fn new() -> Self {
        Self {
            len: 0,
            bytes: [0; Self::CAPACITY],
        }
    }

    /// Appends `bytes`; `None` (and nothing appended) when they do not fit.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Option<()> {
        let at = usize::from(self.len);
        let end = at + bytes.len();
        self.bytes.get_mut(at..end)?.copy_from_slice(bytes);
        // CAPACITY is below 256.
        self.len = end as u8;
        Some(())
    }

    /// The bytes held.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl PartialEq for InlineRecord {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for InlineRecord {}

impl std::fmt::Debug for InlineRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("InlineRecord")
            .field(&self.as_bytes())
            .finish()
    }
}

impl<'a> Run<'a> {
    pub(super) fn answers(set: RrSet<'a>) -> Self {
        Self {
            owner: Owner::Question,
            count: set.count,
            data: RunData::Borrowed(set.body),
            holder: set.owner,
        }
    }

    pub(super) fn extra(set: RrSet<'a>) -> Option<Self> {
        (set.extra_count > 0).then_some(Self {
            owner: Owner::Embedded,
            count: set.extra_count,
            data: RunData::Borrowed(set.extra),
            holder: set.owner,
        })
    }
}

/// The plugin's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<'a> {
    /// NOERROR or NXDOMAIN.
    pub rcode: Rcode,
    /// Index of the served zone the name fell in (its SOA goes in negative answers).
    pub zone: usize,
    /// The answer section.
    pub answer: SmallVec<[Run<'a>; 2]>,
    /// The additional section.
    pub additional: SmallVec<[Run<'a>; 1]>,
    /// An ExternalName target outside the zone, for the server to ask and append.
    pub chase: Option<&'a [u8]>,
}

impl<'a> Answer<'a> {
    pub(super) fn new(rcode: Rcode, zone: usize) -> Self {
        Self {
            rcode,
            zone,
            answer: SmallVec::new(),
            additional: SmallVec::new(),
            chase: None,
        }
    }

    pub(super) fn from_set(zone: usize, set: RrSet<'a>) -> Self {
        let mut answer = Self::new(Rcode::NoError, zone);
        answer.answer.push(Run::answers(set));
        answer.additional.extend(Run::extra(set));
        answer
    }

    /// Whether this is a negative answer (NXDOMAIN, or NOERROR with no records), which
    /// carries the zone's SOA in the authority section.
    pub fn is_negative(&self) -> bool {
        self.rcode == Rcode::NxDomain || self.answer.is_empty()
    }
}
