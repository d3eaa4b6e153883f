//! `--output text|json|yaml`: the commands that print structured data print it for people by
//! default, and as JSON or YAML (the same data, as kubectl's `-o json|yaml`) when asked.

use clap::ValueEnum;
use serde::Serialize;

/// `--output`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum Output {
    /// For people.
    Text,
    /// For programs: JSON.
    Json,
    /// For programs: YAML, the same data as the JSON.
    Yaml,
}

impl Output {
    /// The data format asked for, or `None` for text.
    pub(super) fn data(self) -> Option<Data> {
        match self {
            Self::Text => None,
            Self::Json => Some(Data::Json),
            Self::Yaml => Some(Data::Yaml),
        }
    }
}

/// A data format: what `--output json` and `--output yaml` print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Data {
    Json,
    Yaml,
}

impl Data {
    /// `value` in this format, ending in a newline.
    pub(super) fn render<T: Serialize>(self, value: &T) -> anyhow::Result<String> {
        match self {
            Self::Json => {
                let mut text = serde_json::to_string_pretty(value)?;
                text.push('\n');
                Ok(text)
            }
            Self::Yaml => {
                // Each string on its line, as kubectl's `-o yaml` writes them (grep finds
                // them whole), rather than folded at 80 columns.
                let options = serde_saphyr::ser_options! { prefer_block_scalars: false };
                let mut text = serde_saphyr::to_string_with_options(value, options)
                    .map_err(|error| anyhow::anyhow!("writing YAML: {error}"))?;
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                Ok(text)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// YAML's look-alikes of other types stay strings, and the numbers stay numbers.
    #[test]
    fn yaml_keeps_strings_and_numbers_apart() {
        let value = serde_json::json!({
            "strings": ["yes", "no", "null", "~", "1.0", "0x10", "10.96.0.10:53", "*", "", "a: b", "- x", "#"],
            "numbers": [0, 1, -3, 0.5, 1e-7, 18446744073709551615u64],
            "nothing": null,
            "empty": {"list": [], "map": {}},
        });
        let yaml = Data::Yaml.render(&value).unwrap();
        let back: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(back, value, "{yaml}");
    }
}
