//! The debug pages on the metrics listener (`/debug/search-path`, `/debug/why`): this module
//! routes them and parses their query strings; the server, which knows what they show,
//! provides them through [`DebugPages`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// A debug page on its way (one may have to ask the task that owns what it shows).
pub type PageFuture<'a> = Pin<Box<dyn Future<Output = Option<Page>> + Send + 'a>>;

/// What serves the `/debug/` pages.
pub trait DebugPages: Send + Sync + fmt::Debug {
    /// The page at `path` (what follows `/debug/`) for the raw query string `query`; `None`
    /// when there is no such page.
    fn page<'a>(&'a self, path: &'a str, query: &'a str) -> PageFuture<'a>;
}

/// One debug page's response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The HTTP status.
    pub status: u16,
    /// Its content type.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Page {
    /// `200 OK`, plain text.
    pub fn text(body: String) -> Self {
        Self {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body,
        }
    }

    /// `200 OK`, JSON.
    pub fn json(body: String) -> Self {
        Self {
            status: 200,
            content_type: "application/json",
            body,
        }
    }

    /// `400 Bad Request` with `message` (and a newline).
    pub fn bad_request(message: &str) -> Self {
        Self {
            status: 400,
            content_type: "text/plain; charset=utf-8",
            body: format!("{message}\n"),
        }
    }
}

/// The `key=value` pairs of a query string, percent-decoded (`+` is a space); an error
/// names what is malformed.
pub fn parameters(query: &str) -> Result<Vec<(String, String)>, QueryError> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((decode(key)?, decode(value)?))
        })
        .collect()
}

/// Whether `format=json` was asked for (`text`, the default, otherwise); a bad request for
/// another format. Other parameters are the page's.
pub fn wants_json(params: &[(String, String)]) -> Result<bool, Page> {
    let mut json = false;
    for (key, value) in params {
        match (key.as_str(), value.as_str()) {
            ("format", "json") => json = true,
            ("format", "text") => json = false,
            ("format", other) => {
                return Err(Page::bad_request(&format!(
                    "format: '{other}' is not json or text"
                )));
            }
            _ => {}
        }
    }
    Ok(json)
}

/// One percent-encoded component.
fn decode(text: &str) -> Result<String, QueryError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' => {
                let hex = bytes
                    .get(at + 1..at + 3)
                    .and_then(|hex| std::str::from_utf8(hex).ok())
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| QueryError::Percent(text.to_owned()))?;
                out.push(hex);
                at += 3;
            }
            b'+' => {
                out.push(b' ');
                at += 1;
            }
            byte => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| QueryError::Utf8(text.to_owned()))
}

/// A malformed query string: the component named is as it came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A `%` not followed by two hexadecimal digits.
    #[error("bad percent-encoding in '{0}'")]
    Percent(String),
    /// Bytes that are not UTF-8 once decoded.
    #[error("'{0}' is not UTF-8 once decoded")]
    Utf8(String),
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn query_strings() {
        assert_eq!(
            parameters("name=web.shop%2Esvc&type=A&x").unwrap(),
            [
                ("name".to_owned(), "web.shop.svc".to_owned()),
                ("type".to_owned(), "A".to_owned()),
                ("x".to_owned(), String::new()),
            ]
        );
        assert_eq!(parameters("").unwrap(), []);
        assert_eq!(
            parameters("name=%zz").unwrap_err().to_string(),
            "bad percent-encoding in '%zz'"
        );
        assert_eq!(
            parameters("name=%ff").unwrap_err().to_string(),
            "'%ff' is not UTF-8 once decoded"
        );
        assert_eq!(
            parameters("name=%4").unwrap_err().to_string(),
            "bad percent-encoding in '%4'"
        );
    }
}
