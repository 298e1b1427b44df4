//! Series colours: Paul Tol's "muted" scheme, chosen to stay distinguishable with
//! the common forms of colour blindness; the folded "other" series is always grey.

use plotters::style::RGBColor;

use crate::group::MAX_SERIES;

const SERIES: [RGBColor; MAX_SERIES] = [
    RGBColor(0x33, 0x22, 0x88), // indigo
    RGBColor(0xDD, 0xCC, 0x77), // sand
    RGBColor(0x11, 0x77, 0x33), // green
    RGBColor(0xCC, 0x66, 0x77), // rose
    RGBColor(0x88, 0xCC, 0xEE), // cyan
    RGBColor(0x88, 0x22, 0x55), // wine
    RGBColor(0x44, 0xAA, 0x99), // teal
    RGBColor(0x99, 0x99, 0x33), // olive
];
const OTHER: RGBColor = RGBColor(0xA0, 0xA0, 0xA0);

pub(crate) const TEXT: RGBColor = RGBColor(0x33, 0x33, 0x33);
pub(crate) const AXIS: RGBColor = RGBColor(0x88, 0x88, 0x88);
pub(crate) const GRID: RGBColor = RGBColor(0xE4, 0xE4, 0xE4);

pub(crate) fn series_colour(index: usize, is_other: bool) -> RGBColor {
    if is_other {
        OTHER
    } else {
        SERIES[index % SERIES.len()]
    }
}
