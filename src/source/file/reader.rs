//! The streaming reader of one document: a List walked item by item (each parsed, converted
//! and handed to the loader before the next is read), a single object, or an array of them;
//! serde's errors turned into the file, item, object and field they are about.

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{Error, Loader};
use crate::model::{Object, convert, serviceimport};
use crate::source::decode::{PodObject, SliceObject};

/// Reads the document `deserializer` holds (from `file`) into `staged`; on error what was
/// staged is to be dropped.
pub(super) fn read<'de, R: serde_json::de::Read<'de>>(
    mut deserializer: serde_json::Deserializer<R>,
    file: &Path,
    staged: &mut Loader,
) -> Result<(), Error> {
    let mut reader = Reader {
        file,
        staged,
        failure: None,
    };
    let parsed = Document {
        reader: &mut reader,
    }
    .deserialize(&mut deserializer)
    .and_then(|()| deserializer.end());
    if let Some(error) = reader.failure.take() {
        return Err(error);
    }
    parsed.map_err(|error| {
        if error.is_io() {
            Error::Read {
                file: file.to_owned(),
                error: error.into(),
            }
        } else {
            json_error(&error, file)
        }
    })
}

/// Walks one document.
pub(super) struct Reader<'a> {
    pub(super) file: &'a Path,
    /// What the document holds so far, merged into the loader once the whole document has
    /// been read: a document that fails adds nothing.
    pub(super) staged: &'a mut Loader,
    /// The first error found while streaming: serde only carries strings, so the error is
    /// kept here and the stream is stopped with a placeholder.
    pub(super) failure: Option<Error>,
}

impl Reader<'_> {
    /// Keeps `error` and returns the serde error that stops the stream.
    fn fail<E: serde::de::Error>(&mut self, error: Error) -> E {
        self.failure = Some(error);
        E::custom("stopped")
    }
}

/// The whole document: an object (a List, streamed item by item, or a single object) or an
/// array of objects.
struct Document<'r, 'a> {
    reader: &'r mut Reader<'a>,
}

impl<'de> DeserializeSeed<'de> for Document<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Document<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a List, an object or an array of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(item) = seq.next_element::<Value>()? {
            if let Err(error) = self.reader.item(item, format!("[{index}]"), None) {
                return Err(self.reader.fail(error));
            }
            index += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut fields = serde_json::Map::new();
        let mut pending = Vec::new();
        let mut streamed = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                let items = map.next_value_seed(Items {
                    reader: &mut *self.reader,
                    pending: &mut pending,
                })?;
                streamed = true;
                if let Some(other) = items {
                    fields.insert(key, other);
                }
            } else {
                let value = map.next_value::<Value>()?;
                fields.insert(key, value);
            }
        }
        let result = if streamed && !fields.contains_key("items") {
            self.reader.list_items(&fields, pending)
        } else {
            self.reader.item(Value::Object(fields), String::new(), None)
        };
        result.map_err(|error| self.reader.fail(error))
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Err(self.reader.fail(self.reader.not_a_document("a string")))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Err(self.reader.fail(self.reader.not_a_document("a boolean")))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Err(self.reader.fail(self.reader.not_a_document("a number")))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Err(self.reader.fail(self.reader.not_a_document("a number")))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Err(self.reader.fail(self.reader.not_a_document("a number")))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Err(self.reader.fail(self.reader.not_a_document("null")))
    }
}

/// A List's `items`, streamed: an item that names its own kind and apiVersion is converted
/// at once; one that does not (a typed list's items inherit them from the list, whose `kind`
/// kubectl prints after `items`) waits in `pending`. Anything but an array (or null) is
/// returned as it is, for the list to report.
struct Items<'r, 'a> {
    reader: &'r mut Reader<'a>,
    pending: &'r mut Vec<(usize, Value)>,
}

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut index = 0;
        while let Some(item) = seq.next_element::<Value>()? {
            let self_described = ["kind", "apiVersion"].iter().all(|field| {
                item.get(field)
                    .and_then(Value::as_str)
                    .is_some_and(|v| !v.is_empty())
            });
            if self_described {
                if let Err(error) = self.reader.item(item, format!("items[{index}]"), None) {
                    return Err(self.reader.fail(error));
                }
            } else {
                self.pending.push((index, item));
            }
            index += 1;
        }
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(Some(Value::String(value.to_owned())))
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Self::Value, E> {
        Ok(Some(Value::Bool(value)))
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(value)))
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(value)))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(value)))
    }
}

/// The kinds that are read, with their `apiVersion`.
const KNOWN: [(&str, &str); 5] = [
    ("Namespace", "v1"),
    ("Service", "v1"),
    ("Pod", "v1"),
    ("EndpointSlice", "discovery.k8s.io/v1"),
    ("ServiceImport", serviceimport::API_VERSION),
];

impl Reader<'_> {
    /// The error for a document that is neither an object nor an array.
    fn not_a_document(&self, found: &str) -> Error {
        self.error(
            "",
            "",
            "",
            format!("expected a List, an object or an array of objects, found {found}"),
        )
    }

    /// Finishes a streamed top-level list: `fields` is the list without its `items`, whose
    /// self-described items are already read; `pending` are the others, read now with the
    /// kind and apiVersion they inherit.
    fn list_items(
        &mut self,
        fields: &serde_json::Map<String, Value>,
        pending: Vec<(usize, Value)>,
    ) -> Result<(), Error> {
        let kind = fields.get("kind").and_then(Value::as_str).unwrap_or("List");
        let api_version = fields
            .get("apiVersion")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty());
        let item_kind = kind.strip_suffix("List").filter(|kind| !kind.is_empty());
        let inherited = item_kind.map(|kind| (kind, api_version));
        for (index, item) in pending {
            self.item(item, format!("items[{index}]"), inherited)?;
        }
        Ok(())
    }

    fn error(&self, location: &str, object: &str, path: &str, message: String) -> Error {
        Error::Object {
            file: self.file.to_owned(),
            location: location.to_owned(),
            object: object.to_owned(),
            path: path.to_owned(),
            message,
        }
    }

    /// One element of the document: an object, or a list of them. `inherited` is the kind and
    /// apiVersion of a typed list (`ServiceList`), whose items carry none.
    fn item(
        &mut self,
        value: Value,
        location: String,
        inherited: Option<(&str, Option<&str>)>,
    ) -> Result<(), Error> {
        let Value::Object(mut map) = value else {
            return Err(self.error(
                &location,
                "",
                "",
                format!("expected an object, found {}", json_type(&value)),
            ));
        };

        let kind = match map.get("kind") {
            Some(Value::String(kind)) if !kind.is_empty() => kind.clone(),
            None | Some(Value::Null) | Some(Value::String(_)) => match inherited {
                Some((kind, _)) => kind.to_owned(),
                None => {
                    return Err(self.error(
                        &location,
                        "",
                        "kind",
                        "expected the object's kind, found nothing".to_owned(),
                    ));
                }
            },
            Some(other) => {
                return Err(self.error(
                    &location,
                    "",
                    "kind",
                    format!("expected the object's kind, found {}", json_type(other)),
                ));
            }
        };
        let api_version = match map.get("apiVersion") {
            Some(Value::String(version)) if !version.is_empty() => Some(version.clone()),
            _ => inherited.and_then(|(_, version)| version.map(str::to_owned)),
        };

        let is_list = kind == "List" || (kind.ends_with("List") && map.contains_key("items"));
        if is_list {
            let items = match map.remove("items").unwrap_or(Value::Null) {
                Value::Array(items) => items,
                Value::Null => Vec::new(),
                other => {
                    return Err(self.error(
                        &location,
                        &kind,
                        "items",
                        format!("expected an array of objects, found {}", json_type(&other)),
                    ));
                }
            };
            let item_kind = kind.strip_suffix("List").filter(|kind| !kind.is_empty());
            let inherited = item_kind.map(|kind| (kind, api_version.as_deref()));
            for (index, item) in items.into_iter().enumerate() {
                let location = if location.is_empty() {
                    format!("items[{index}]")
                } else {
                    format!("{location}.items[{index}]")
                };
                self.item(item, location, inherited)?;
            }
            return Ok(());
        }

        let metadata = map.get("metadata");
        let name = match metadata.and_then(|metadata| metadata.get("name")) {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            found => {
                let found = match found {
                    None | Some(Value::Null | Value::String(_)) => "nothing",
                    Some(other) => json_type(other),
                };
                return Err(self.error(
                    &location,
                    &kind,
                    "metadata.name",
                    format!("expected the object's name, found {found}"),
                ));
            }
        };
        let namespace = match metadata.and_then(|metadata| metadata.get("namespace")) {
            Some(Value::String(namespace)) if !namespace.is_empty() => namespace.clone(),
            _ => convert::DEFAULT_NAMESPACE.to_owned(),
        };

        let known = KNOWN
            .iter()
            .find(|(known_kind, _)| *known_kind == kind)
            .copied();
        let Some((_, version)) = known else {
            self.staged.ignore(kind);
            return Ok(());
        };
        if let Some(api_version) = api_version.as_deref().filter(|v| *v != version) {
            self.staged.ignore(format!("{kind} ({api_version})"));
            return Ok(());
        }
        // Typed lists' items have no kind or apiVersion; k8s-openapi accepts their absence.
        map.remove("kind");
        map.remove("apiVersion");

        let object = if kind == "Namespace" {
            format!("Namespace {name}")
        } else {
            format!("{kind} {namespace}/{name}")
        };
        let converted = self.convert(&kind, Value::Object(map), &location, &object)?;
        self.staged.keep(converted);
        Ok(())
    }

    /// The model object of `value`, an object of the known `kind` without its `kind` and
    /// `apiVersion`. A Pod and an EndpointSlice are decoded into what the conversion reads
    /// (`source::decode`), the other kinds into their k8s-openapi types.
    pub(super) fn convert(
        &self,
        kind: &str,
        value: Value,
        location: &str,
        object: &str,
    ) -> Result<Object, Error> {
        let converted = match kind {
            "Namespace" => {
                convert::namespace(&self.typed(value, location, object)?).map(Object::Namespace)
            }
            "Service" => {
                convert::service(&self.typed(value, location, object)?).map(Object::Service)
            }
            "Pod" => convert::pod(&self.typed::<PodObject>(value, location, object)?.into_pod())
                .map(Object::Pod),
            "ServiceImport" => serviceimport::service_import(&self.typed(value, location, object)?)
                .map(Object::ServiceImport),
            _ => convert::endpoint_slice(
                &self
                    .typed::<SliceObject>(value, location, object)?
                    .into_slice(),
            )
            .map(Object::EndpointSlice),
        };
        converted.map_err(|error| self.conversion_error(location, object, &error))
    }

    /// The error of an object that decoded but does not convert.
    pub(super) fn conversion_error(
        &self,
        location: &str,
        object: &str,
        error: &convert::ConvertError,
    ) -> Error {
        self.error(
            location,
            object,
            &error.path,
            format!("expected {}, found {}", error.expected, error.found),
        )
    }

    /// Deserializes `value` into a k8s-openapi type (or one of `source::decode`'s), with the
    /// JSON path of any error.
    pub(super) fn typed<T: DeserializeOwned>(
        &self,
        value: Value,
        location: &str,
        object: &str,
    ) -> Result<T, Error> {
        serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
            let path = error.path().to_string();
            let path = if path == "." { String::new() } else { path };
            self.error(
                location,
                object,
                &path,
                plain_types(&error.into_inner().to_string()),
            )
        })
    }
}

/// serde's message with its Rust type names said in words: `expected i32` is `expected a
/// whole number`.
fn plain_types(message: &str) -> String {
    const WHOLE: [&str; 10] = [
        "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize",
    ];
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("expected ") {
        let (before, after) = rest.split_at(at + "expected ".len());
        out.push_str(before);
        let end = after
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(after.len());
        let word = &after[..end];
        if WHOLE.contains(&word) {
            out.push_str("a whole number");
        } else if word == "f32" || word == "f64" {
            out.push_str("a number");
        } else {
            out.push_str(word);
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn json_error(error: &serde_json::Error, file: &Path) -> Error {
    let (line, column) = (error.line(), error.column());
    let message = error.to_string();
    let suffix = format!(" at line {line} column {column}");
    let message = message
        .strip_suffix(&suffix)
        .map_or_else(|| message.clone(), str::to_owned);
    Error::Json {
        file: file.to_owned(),
        line,
        column,
        message,
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
