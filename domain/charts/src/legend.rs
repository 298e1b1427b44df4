//! Legend placement: entries flow left to right in rows under the plot, with names
//! shortened until the legend fits its share of the height.

use crate::text::{fit, width_px};

pub(crate) const ROW_PX: u32 = 18;
pub(crate) const SWATCH_PX: u32 = 12;
const SWATCH_GAP_PX: u32 = 5;
const ENTRY_GAP_PX: u32 = 16;
/// Longest name first tried; shorter ones are tried when the rows do not fit.
const NAME_CHARS: [usize; 5] = [32, 24, 16, 12, 8];

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub label: String,
    /// Offset from the legend's left edge.
    pub x: u32,
    pub row: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Legend {
    pub entries: Vec<Entry>,
    pub rows: u32,
}

impl Legend {
    pub fn height_px(&self) -> u32 {
        if self.rows == 0 {
            0
        } else {
            self.rows * ROW_PX + 6
        }
    }
}

/// Lays out `names` in `width` pixels, trying to keep within `max_height` pixels.
pub(crate) fn layout(names: &[String], width: u32, max_height: u32, font_px: f64) -> Legend {
    let mut legend = Legend {
        entries: Vec::new(),
        rows: 0,
    };
    for max_chars in NAME_CHARS {
        legend = flow(names, width, max_chars, font_px);
        if legend.height_px() <= max_height {
            break;
        }
    }
    legend
}

fn flow(names: &[String], width: u32, max_chars: usize, font_px: f64) -> Legend {
    let mut entries = Vec::with_capacity(names.len());
    let (mut x, mut row) = (0, 0);
    for name in names {
        let label = fit(name, max_chars);
        let entry_px = SWATCH_PX + SWATCH_GAP_PX + width_px(&label, font_px) + ENTRY_GAP_PX;
        if x > 0 && x + entry_px > width {
            row += 1;
            x = 0;
        }
        entries.push(Entry { label, x, row });
        x += entry_px;
    }
    let rows = if entries.is_empty() { 0 } else { row + 1 };
    Legend { entries, rows }
}

pub(crate) fn label_x(entry: &Entry) -> u32 {
    entry.x + SWATCH_PX + SWATCH_GAP_PX
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn short_names_share_a_row() {
        let legend = layout(&names(&["alice", "bob", "carol"]), 600, 100, 11.0);
        assert_eq!(legend.rows, 1);
        // swatch, gap, 5 characters at 0.6em of 11px, gap
        assert_eq!(legend.entries[1].x, 12 + 5 + 33 + 16);
    }

    #[test]
    fn long_names_are_shortened_to_fit_the_height() {
        let long = "a-very-long-project-name-that-goes-on-and-on";
        let legend = layout(&names(&[long; 8]), 300, 60, 11.0);
        assert!(legend.height_px() <= 60, "{legend:?}");
        assert!(legend.entries[0].label.chars().count() <= 12);
    }

    #[test]
    fn no_names_no_legend() {
        assert_eq!(layout(&[], 300, 60, 11.0).height_px(), 0);
    }
}
