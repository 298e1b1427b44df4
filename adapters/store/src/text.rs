//! Closed sets the store keeps in text columns: a Rust enum to callers, the same strings
//! as ever in the column (TEXT on Postgres and SQLite alike), so no migration is involved.

/// Declares such an enum, each variant with the text stored for it. sqlx maps the column
/// to and from the variants by that text; the enum shows as it, and equals it, so listings
/// and tests can still compare with the stored name.
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $text:tt, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, sqlx::Type)]
        #[sqlx(type_name = "text")]
        pub enum $name {
            $( $(#[$variant_meta])* #[sqlx(rename = $text)] $variant, )+
        }

        impl $name {
            /// The text stored in the column.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, text: &&str) -> bool {
                self.as_str() == *text
            }
        }
    };
}
pub(crate) use text_enum;

/// `text` if it fits in `max` bytes, else its longest prefix ending on a character
/// boundary that fits with `…` after it: how untrusted text is bounded for a column.
pub fn fit_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
