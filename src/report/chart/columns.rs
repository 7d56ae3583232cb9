//! A series with more points than the chart has pixel columns is drawn from one point per column: the
//! column's highest value, so a spike never disappears however long the run.

/// `points` (x ascending) reduced to at most `columns` points over `x_range`, each the highest of its column.
pub(super) fn per_column(
    points: &[(f64, f64)],
    x_range: (f64, f64),
    columns: usize,
) -> Vec<(f64, f64)> {
    if points.len() <= columns || columns == 0 {
        return points.to_vec();
    }
    let (low, high) = x_range;
    let span = (high - low).max(f64::MIN_POSITIVE);
    let column = |x: f64| (((x - low) / span * columns as f64) as usize).min(columns - 1);
    let mut out: Vec<(usize, (f64, f64))> = Vec::with_capacity(columns);
    for &(x, y) in points {
        let c = column(x);
        match out.last_mut() {
            Some((last, kept)) if *last == c => {
                if y > kept.1 {
                    *kept = (x, y);
                }
            }
            _ => out.push((c, (x, y))),
        }
    }
    out.into_iter().map(|(_, point)| point).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_of_seconds_keeps_one_point_per_column_and_the_spike() {
        let mut points: Vec<(f64, f64)> = (0..3600).map(|s| (f64::from(s), 10.0)).collect();
        points[1234].1 = 900.0;
        let reduced = per_column(&points, (0.0, 3600.0), 700);
        assert!(reduced.len() <= 700, "{}", reduced.len());
        assert!(reduced.contains(&(1234.0, 900.0)));
    }

    #[test]
    fn a_short_series_is_kept_as_is() {
        let points = [(0.0, 1.0), (1.0, 2.0)];
        assert_eq!(per_column(&points, (0.0, 2.0), 700), points);
    }
}
