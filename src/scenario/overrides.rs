//! `--set path=value` overrides applied to the TOML document before validation.
