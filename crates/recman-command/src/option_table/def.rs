//! What a row of the option table says about its option.

/// An inclusive range of a whole-number option.
pub type Range = (u64, u64);

/// What values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number in the range.
    Count(Range),
    /// A size (512K, 1M, 2G; bytes without a suffix) in the range of bytes.
    Size(Range),
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A whole number with s, m, h or d.
    Duration,
    /// Free text checked by the setting's own parser (a retention policy, a compression).
    Text,
    /// A flag without a value.
    Switch,
}

/// One option, written once.
#[derive(Debug, Clone, Copy)]
pub struct OptionDef {
    /// The flag's name without dashes, and the name `configure` and `show all` use.
    pub name: &'static str,
    pub kind: Kind,
    /// The built-in default as `show all` prints it; None: unset (`show all` prints none).
    pub default: Option<&'static str>,
    /// What a number counts, for help and documents.
    pub unit: Option<&'static str>,
    /// The environment variable the flag reads when not given.
    pub env: Option<&'static str>,
    /// Its key in the --config file; None when the file may not set it.
    pub config_key: Option<&'static str>,
    /// Its key in the catalog; Some makes it a setting CONFIGURE stores and SHOW ALL prints.
    pub catalog_key: Option<&'static str>,
    /// RMAN's keyword for it, where RMAN has one.
    pub rman: Option<&'static str>,
    /// The backup command's `--NAME` is made from this row (the CLI's `table_args`) and its
    /// value carried by name in `BackupDatabase::table`, so the option needs no field of its
    /// own anywhere between the flag and the code that uses it.
    pub flag_from_table: bool,
    /// The flag's help as `--help` prints it (it states the range of a number or a size; no
    /// final period, as clap prints a one-paragraph doc comment).
    pub help: &'static str,
}

impl OptionDef {
    /// The range of a count or a size; a const fn so that [`crate::ranges`] can name it.
    pub const fn range(&self) -> Range {
        match self.kind {
            Kind::Count(r) | Kind::Size(r) => r,
            _ => panic!("only counts and sizes have a range"),
        }
    }

    /// Whether CONFIGURE stores it and SHOW ALL prints it.
    pub const fn configurable(&self) -> bool {
        self.catalog_key.is_some()
    }

    /// The default as `show all` and `configure … clear` print it.
    pub fn default_text(&self) -> &'static str {
        self.default.unwrap_or("none")
    }
}

/// A row with nothing but its name, kind and help; the rows below fill in the rest.
pub(super) const fn row(name: &'static str, kind: Kind, help: &'static str) -> OptionDef {
    OptionDef {
        name,
        kind,
        default: None,
        unit: None,
        env: None,
        config_key: None,
        catalog_key: None,
        rman: None,
        flag_from_table: false,
        help,
    }
}
