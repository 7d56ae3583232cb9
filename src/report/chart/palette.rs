//! The charts' colours: one per series or outcome, chosen to stay apart for common colour-vision deficiencies
//! (the Okabe-Ito set), and the greys of the frame.

use plotters::style::RGBColor;

pub(super) const P50: RGBColor = RGBColor(0, 114, 178);
pub(super) const P95: RGBColor = RGBColor(230, 159, 0);
pub(super) const P99: RGBColor = RGBColor(213, 94, 0);
pub(super) const BASELINE: RGBColor = RGBColor(120, 120, 120);
pub(super) const FAULT_WINDOW: RGBColor = RGBColor(253, 226, 226);
pub(super) const FAULT_LABEL: RGBColor = RGBColor(170, 40, 40);
pub(super) const SLO: RGBColor = RGBColor(0, 158, 115);
pub(super) const SLO_MISSED: RGBColor = RGBColor(204, 0, 0);
pub(super) const ERRORS: RGBColor = RGBColor(204, 0, 0);
pub(super) const TIMEOUTS: RGBColor = RGBColor(204, 121, 167);
pub(super) const TEXT: RGBColor = RGBColor(30, 30, 30);
pub(super) const GRID: RGBColor = RGBColor(225, 225, 225);
pub(super) const WARNING: RGBColor = RGBColor(180, 90, 0);
pub(super) const BASELINE_TAIL: RGBColor = RGBColor(60, 60, 60);
/// Detection and recovery marks: a violet apart from every series and from the windows' red.
pub(super) const MARK: RGBColor = RGBColor(86, 60, 160);
/// The rate the schedule offered, and the rate achieved.
pub(super) const OFFERED: RGBColor = RGBColor(86, 180, 233);
pub(super) const ACHIEVED: RGBColor = RGBColor(0, 90, 140);
/// One colour per request of a traffic mix, in its order (repeating past the eighth), apart from the SLO
/// lines' green and red.
pub(super) const REQUESTS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(90, 90, 90),
    RGBColor(140, 86, 75),
    RGBColor(120, 120, 0),
];

/// The colour of the request at `index` of the mix.
pub(super) fn request_colour(index: usize) -> RGBColor {
    REQUESTS[index % REQUESTS.len()]
}
