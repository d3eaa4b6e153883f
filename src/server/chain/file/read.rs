//! Reading an RFC 1035 zone file (the *file* plugin's DBFILE) into records, with errors
//! naming the file and line.
//!
//! This module splits the text into entries (comments, quoting, parentheses across lines,
//! owner names carried over from a line that starts with a blank) and applies `$ORIGIN`,
//! `$TTL` and `$INCLUDE FILE [ORIGIN]` (a relative FILE is relative to the file that includes
//! it, seven levels at most, as miekg/dns allows). Each record's data is parsed by
//! hickory-proto's zone parser, given the record with its owner, TTL and class already
//! resolved, so every record type hickory knows is read as it reads it. TTLs follow
//! miekg/dns: a record without one takes `$TTL`, else the last TTL written, else 3600.
//! Only class IN is read; `$GENERATE` and DNSSEC records are refused. DNAME records, which
//! hickory-proto does not read, are read here (their target kept as wire data).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use hickory_proto::rr::rdata::NULL;
use hickory_proto::rr::{Name, RData, Record, RecordType};
use hickory_proto::serialize::txt::{Parser, parse_ttl};

/// How deep `$INCLUDE` may nest (miekg/dns's `maxIncludeDepth`).
const MAX_INCLUDE_DEPTH: usize = 7;

/// The TTL of a record that has none, before `$TTL` or any explicit TTL (miekg/dns's).
const DEFAULT_TTL: u32 = 3600;

/// A zone file that does not read: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZoneError {
    /// The file (an included one, when the error is there).
    pub(crate) file: PathBuf,
    /// The line, 0 when the error is about the whole file.
    pub(crate) line: usize,
    /// What is wrong.
    pub(crate) message: String,
}

impl std::fmt::Display for ZoneError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

/// One entry of a zone file: its fields as written (quotes and escapes kept).
#[derive(Debug)]
struct Entry {
    /// The line it starts on.
    line: usize,
    /// Whether the line starts with a blank (the owner is the previous entry's).
    blank: bool,
    fields: Vec<String>,
}

/// The TTL a record without one gets.
#[derive(Debug, Clone, Copy)]
struct DefaultTtl {
    ttl: u32,
    /// Set by `$TTL` (an explicit TTL no longer changes it).
    by_directive: bool,
}

/// Reads the zone file at `path` for `origin`: its records, in file order.
pub(crate) fn read_zone(path: &Path, origin: &Name) -> Result<Vec<Record>, ZoneError> {
    let mut records = Vec::new();
    let mut ttl = DefaultTtl {
        ttl: DEFAULT_TTL,
        by_directive: false,
    };
    read_file(path, origin, 0, &mut ttl, &mut records)?;
    Ok(records)
}

/// Parses zone-file `text` as if read from `path`, for `origin` (the tests' entry).
#[cfg(test)]
pub(crate) fn parse_zone(text: &str, path: &Path, origin: &Name) -> Result<Vec<Record>, ZoneError> {
    let mut records = Vec::new();
    let mut ttl = DefaultTtl {
        ttl: DEFAULT_TTL,
        by_directive: false,
    };
    parse_text(text, path, origin, 0, &mut ttl, &mut records)?;
    Ok(records)
}

/// Reads one file (the zone file or an included one).
fn read_file(
    path: &Path,
    origin: &Name,
    depth: usize,
    ttl: &mut DefaultTtl,
    records: &mut Vec<Record>,
) -> Result<(), ZoneError> {
    let bytes =
        crate::config::read_regular(path, crate::config::MAX_FILE_BYTES).map_err(|error| {
            ZoneError {
                file: path.to_path_buf(),
                line: 0,
                message: error.to_string(),
            }
        })?;
    let text = String::from_utf8_lossy(&bytes);
    parse_text(&text, path, origin, depth, ttl, records)
}

/// Parses zone-file `text` (read from `path`) with `origin`, appending its records.
fn parse_text(
    text: &str,
    path: &Path,
    origin: &Name,
    depth: usize,
    ttl: &mut DefaultTtl,
    records: &mut Vec<Record>,
) -> Result<(), ZoneError> {
    let at = |line: usize, message: String| ZoneError {
        file: path.to_path_buf(),
        line,
        message,
    };
    let mut origin = origin.clone();
    let mut owner: Option<Name> = None;
    for entry in entries(text).map_err(|(line, message)| at(line, message))? {
        let line = entry.line;
        let first = entry.fields.first().map(String::as_str).unwrap_or_default();
        if first.starts_with('$') {
            directive(&entry, path, &mut origin, depth, ttl, records)?;
            continue;
        }
        let mut fields = entry.fields.iter().map(String::as_str).peekable();
        let name = if entry.blank {
            owner
                .clone()
                .ok_or_else(|| at(line, "a record without an owner name".to_owned()))?
        } else {
            let written = fields.next().unwrap_or_default();
            name_in(written, &origin).map_err(|message| at(line, message))?
        };
        owner = Some(name.clone());
        let record = record(&name, &mut fields, &origin, ttl).map_err(|m| at(line, m))?;
        records.extend(record);
    }
    Ok(())
}

/// A name as written in the file: `@` is the origin, a relative name is below it.
fn name_in(text: &str, origin: &Name) -> Result<Name, String> {
    if text == "@" {
        return Ok(origin.clone());
    }
    Name::parse(text, Some(origin))
        .map(|name| name.to_lowercase())
        .map_err(|error| format!("bad name '{text}': {error}"))
}

/// A `$` directive.
fn directive(
    entry: &Entry,
    path: &Path,
    origin: &mut Name,
    depth: usize,
    ttl: &mut DefaultTtl,
    records: &mut Vec<Record>,
) -> Result<(), ZoneError> {
    let at = |message: String| ZoneError {
        file: path.to_path_buf(),
        line: entry.line,
        message,
    };
    let name = entry.fields[0].to_ascii_uppercase();
    let args = &entry.fields[1..];
    match (name.as_str(), args) {
        ("$ORIGIN", [new]) => *origin = name_in(new, origin).map_err(at)?,
        ("$TTL", [value]) => {
            let value = parse_ttl(value).map_err(|_| at(format!("bad $TTL '{value}'")))?;
            *ttl = DefaultTtl {
                ttl: value,
                by_directive: true,
            };
        }
        ("$INCLUDE", [file] | [file, _]) => {
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(at(format!(
                    "$INCLUDE nested more than {MAX_INCLUDE_DEPTH} levels deep"
                )));
            }
            let included = match args.get(1) {
                Some(new) => name_in(new, origin).map_err(at)?,
                None => origin.clone(),
            };
            let file = Path::new(file.trim_matches('"'));
            let file = if file.is_absolute() {
                file.to_path_buf()
            } else {
                path.parent().unwrap_or(Path::new("")).join(file)
            };
            read_file(&file, &included, depth + 1, ttl, records)?;
        }
        ("$GENERATE", _) => return Err(at("$GENERATE is not supported".to_owned())),
        ("$ORIGIN" | "$TTL", _) => return Err(at(format!("{name} takes one argument"))),
        ("$INCLUDE", _) => return Err(at("$INCLUDE takes a file and an origin".to_owned())),
        _ => return Err(at(format!("unknown directive '{}'", entry.fields[0]))),
    }
    Ok(())
}

/// The record of one entry, after its owner: `[TTL] [CLASS] TYPE RDATA` (TTL and class in
/// either order). `None` for a record hickory reads as nothing.
fn record<'f>(
    owner: &Name,
    fields: &mut std::iter::Peekable<impl Iterator<Item = &'f str>>,
    origin: &Name,
    default: &mut DefaultTtl,
) -> Result<Option<Record>, String> {
    let mut ttl = None;
    let mut rtype = None;
    for field in fields.by_ref() {
        if ttl.is_none()
            && field.starts_with(|c: char| c.is_ascii_digit())
            && let Ok(value) = parse_ttl(field)
        {
            ttl = Some(value);
            continue;
        }
        let upper = field.to_ascii_uppercase();
        match upper.as_str() {
            "IN" => continue,
            "CH" | "HS" | "CS" | "NONE" | "ANY" => {
                return Err(format!("class {upper} is not supported (only IN)"));
            }
            class if class.starts_with("CLASS") => {
                return Err(format!("class {upper} is not supported (only IN)"));
            }
            _ => {}
        }
        rtype = Some(
            RecordType::from_str(&upper).map_err(|_| format!("unknown record type '{field}'"))?,
        );
        break;
    }
    let Some(rtype) = rtype else {
        return Err("a record without a type".to_owned());
    };
    if matches!(
        rtype,
        RecordType::DNSKEY
            | RecordType::CDNSKEY
            | RecordType::KEY
            | RecordType::DS
            | RecordType::CDS
            | RecordType::NSEC
            | RecordType::RRSIG
            | RecordType::SIG
    ) {
        return Err(format!("{rtype} records are not supported (DNSSEC)"));
    }
    if matches!(rtype, RecordType::NSEC3 | RecordType::NSEC3PARAM) {
        return Err(format!("NSEC3 zone is not supported, dropping RR: {owner}"));
    }
    let ttl = match ttl {
        Some(ttl) => {
            if !default.by_directive {
                default.ttl = ttl;
            }
            ttl
        }
        None => default.ttl,
    };
    let data: Vec<&str> = fields.collect();
    if rtype == RecordType::DNAME {
        // Not read by hickory-proto: its target kept as wire data.
        let [target] = data.as_slice() else {
            return Err("a DNAME record takes one name".to_owned());
        };
        let target = name_in(target, origin)?;
        let rdata = RData::Unknown {
            code: RecordType::DNAME,
            rdata: NULL::with(wire_of(&target)),
        };
        return Ok(Some(Record::from_rdata(owner.clone(), ttl, rdata)));
    }
    let text = format!("{owner} {ttl} IN {rtype} {}\n", data.join(" "));
    let (_, sets) = Parser::new(text, None, Some(origin.clone()))
        .parse()
        .map_err(|error| format!("bad {rtype} record: {error}"))?;
    Ok(sets
        .into_values()
        .flat_map(|set| set.records_without_rrsigs().cloned().collect::<Vec<_>>())
        .next())
}

/// `name` in wire format, uncompressed.
fn wire_of(name: &Name) -> Vec<u8> {
    let mut wire = Vec::with_capacity(name.len() + 2);
    for label in name.iter() {
        wire.push(u8::try_from(label.len()).unwrap_or(63));
        wire.extend_from_slice(label);
    }
    wire.push(0);
    wire
}

/// Splits `text` into entries; an error is the line it is on and why.
fn entries(text: &str) -> Result<Vec<Entry>, (usize, String)> {
    let mut entries = Vec::new();
    let mut line = 1;
    let mut field = String::new();
    let mut current: Option<Entry> = None;
    let mut at_line_start = true;
    let mut blank = false;
    let mut quoted = false;
    let mut depth = 0usize;
    let mut opened = 0usize;
    let mut chars = text.chars().peekable();
    let end_field = |field: &mut String, current: &mut Option<Entry>, line, blank| {
        if !field.is_empty() {
            let entry = current.get_or_insert_with(|| Entry {
                line,
                blank,
                fields: Vec::new(),
            });
            entry.fields.push(std::mem::take(field));
        }
    };
    while let Some(c) = chars.next() {
        if at_line_start {
            at_line_start = false;
            if depth == 0 {
                blank = c == ' ' || c == '\t';
            }
        }
        if c == '\\' {
            // An escape, quoted or not: the character after it is the field's as it is.
            field.push(c);
            if let Some(next) = chars.next() {
                field.push(next);
            }
            continue;
        }
        if quoted {
            match c {
                '"' => {
                    field.push(c);
                    quoted = false;
                }
                '\n' => return Err((line, "a quoted string runs past the line".to_owned())),
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                field.push(c);
                quoted = true;
            }
            ';' => {
                while chars.peek().is_some_and(|&next| next != '\n') {
                    chars.next();
                }
            }
            '(' => {
                end_field(&mut field, &mut current, line, blank);
                if depth == 0 {
                    opened = line;
                }
                depth += 1;
            }
            ')' => {
                end_field(&mut field, &mut current, line, blank);
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| (line, "a ')' without its '('".to_owned()))?;
            }
            '\n' => {
                end_field(&mut field, &mut current, line, blank);
                if depth == 0 {
                    entries.extend(current.take());
                }
                line += 1;
                at_line_start = true;
            }
            ' ' | '\t' | '\r' => end_field(&mut field, &mut current, line, blank),
            _ => field.push(c),
        }
    }
    if quoted {
        return Err((line, "a quoted string is not closed".to_owned()));
    }
    if depth > 0 {
        return Err((opened, "a '(' is not closed".to_owned()));
    }
    end_field(&mut field, &mut current, line, blank);
    entries.extend(current.take());
    Ok(entries)
}

#[cfg(test)]
mod tests;
