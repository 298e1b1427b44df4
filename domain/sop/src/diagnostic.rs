use std::fmt;

use thiserror::Error;

/// One problem in an SOP file, located so an editor can jump to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file (or `builtin:<name>`).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong, and where possible how to fix it.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

/// Why an SOP file was refused: every problem found, in file order.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub struct SopError {
    /// The problems; never empty.
    pub diagnostics: Vec<Diagnostic>,
}

impl fmt::Display for SopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}
