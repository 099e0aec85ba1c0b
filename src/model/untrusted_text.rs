//! Text that came from a result file or a bundle: someone else's bytes, printable only
//! through the escaper of the format it is printed in.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The output formats text is escaped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// A terminal, a log or a CSV field: control characters shown escaped
    /// ([`crate::text::escape_control`]); CSV quoting is the record writer's.
    Terminal,
    /// One line of Markdown: also `<`/`>` as entities, no links, line breaks as
    /// spaces ([`crate::text::escape_markdown_inline`]).
    Markdown,
    /// The inside of a Markdown table cell: [`TextFormat::Markdown`] and `|` escaped.
    MarkdownCell,
    /// HTML text or an attribute value ([`crate::text::escape_html`]).
    Html,
}

/// A string read from a result file or a bundle. On disk it is a plain JSON string
/// (`serde(transparent)`), so the file format is unchanged; in the program it has no
/// `Display` and no `Deref<Target = str>`, so it cannot reach output without
/// [`UntrustedText::escaped`] naming the format. Comparing it with other text
/// ([`PartialEq<str>`], [`UntrustedText::trusted_raw_for_comparison`]) prints nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UntrustedText(String);

impl UntrustedText {
    /// `text` escaped for `format`; borrowed when there was nothing to escape.
    pub fn escaped(&self, format: TextFormat) -> Cow<'_, str> {
        match format {
            TextFormat::Terminal => Cow::Owned(crate::text::escape_control(&self.0)),
            TextFormat::Markdown => {
                Cow::Owned(crate::text::escape_markdown_inline(&crate::text::escape_control(&self.0)).into_owned())
            }
            TextFormat::MarkdownCell => {
                Cow::Owned(crate::text::escape_markdown_cell(&crate::text::escape_control(&self.0)))
            }
            TextFormat::Html => Cow::Owned(crate::text::escape_html(&self.0)),
        }
    }

    /// `text` from a result file or a bundle that is held as a plain `String` (a bundle's
    /// scenario values, its manifest's paths), escaped for `format` by the same escapers
    /// as [`UntrustedText::escaped`]: the one way such text reaches output.
    pub fn escape(text: &str, format: TextFormat) -> String {
        UntrustedText::from(text).escaped(format).into_owned()
    }

    /// The bytes as read, for comparing, hashing and choosing (`op == "rm_rf"`), never for
    /// output: the name says so at every call site.
    pub fn trusted_raw_for_comparison(&self) -> &str {
        &self.0
    }
}

// In the published schemas it is what it is on disk: a plain string, written inline.
impl JsonSchema for UntrustedText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        String::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

impl From<&str> for UntrustedText {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

impl From<String> for UntrustedText {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl PartialEq<str> for UntrustedText {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for UntrustedText {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_gets_its_own_escaping_and_the_json_is_a_plain_string() {
        let t = UntrustedText::from("a\n## b <img src=x> | \u{1b}[2J");
        assert_eq!(t.escaped(TextFormat::Terminal), "a\\n## b <img src=x> | \\u{1b}[2J");
        assert_eq!(t.escaped(TextFormat::Markdown), "a\\n## b &lt;img src=x&gt; | \\u{1b}[2J");
        assert_eq!(t.escaped(TextFormat::MarkdownCell), "a\\n## b &lt;img src=x&gt; \\| \\u{1b}[2J");
        assert!(t.escaped(TextFormat::Html).contains("&lt;img"));
        assert_eq!(serde_json::to_string(&UntrustedText::from("untar")).unwrap(), "\"untar\"");
        let back: UntrustedText = serde_json::from_str("\"sync\"").unwrap();
        assert!(back == "sync" && back.trusted_raw_for_comparison() == "sync");
    }
}
