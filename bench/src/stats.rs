//! Percentiles and medians.

/// The `q`-quantile (0.0..=1.0) of sorted samples, nearest-rank; `None` when there are none.
///
/// ```
/// use mcp_bench::stats::quantile_sorted;
///
/// let samples = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
/// assert_eq!(quantile_sorted(&samples, 0.5), Some(5));
/// assert_eq!(quantile_sorted(&samples, 0.99), Some(10));
/// assert_eq!(quantile_sorted::<u64>(&[], 0.5), None);
/// ```
pub fn quantile_sorted<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let q = q.clamp(0.0, 1.0);
    // Nearest rank: the smallest sample with at least q of the samples at or below it.
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.saturating_sub(1).min(sorted.len() - 1))
        .copied()
}

/// The median of the values (mean of the two middle ones for an even count), ignoring NaN;
/// `None` when there are none.
///
/// ```
/// use mcp_bench::stats::median;
///
/// assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
/// assert_eq!(median(&[]), None);
/// ```
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted.get(mid).copied()
    } else {
        Some((sorted[mid - 1] + sorted[mid]) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_one_and_many() {
        assert_eq!(quantile_sorted(&[7u64], 0.0), Some(7));
        assert_eq!(quantile_sorted(&[7u64], 1.0), Some(7));
        let samples: Vec<u64> = (1..=1000).collect();
        assert_eq!(quantile_sorted(&samples, 0.5), Some(500));
        assert_eq!(quantile_sorted(&samples, 0.99), Some(990));
        assert_eq!(quantile_sorted(&samples, 0.999), Some(999));
        assert_eq!(quantile_sorted(&samples, 2.0), Some(1000));
    }

    #[test]
    fn median_ignores_nan() {
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
        assert_eq!(median(&[f64::NAN]), None);
    }
}
