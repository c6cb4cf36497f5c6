//! Summary statistics every report shares: the mean and the nearest-rank quantile.
//! One definition, so a figure means the same in `report`, `live`, task reports and the
//! ContextBench and SARI aggregates.

use std::borrow::Borrow;

/// The mean of some values in the order given, `None` when there are none. Summed from
/// +0.0 like Python's `sum` (Rust's `Sum` starts at -0.0, so all-negative-zero input
/// would print as `-0.000`), which keeps the reference ports bit for bit.
pub fn mean<T: Borrow<f64>>(values: impl IntoIterator<Item = T>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        sum += *v.borrow();
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

/// The `q` quantile (nearest rank, `q` in 0..=1) of some values, `None` when there are none.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(sorted[((sorted.len() - 1) as f64 * q).round() as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_quantile() {
        assert_eq!(mean([1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean(&[0.5, 0.25][..]), Some(0.375));
        assert_eq!(mean(Vec::<f64>::new()), None);
        assert_eq!(mean([-0.0, -0.0]).map(f64::to_bits), Some(0.0f64.to_bits()));
        assert_eq!(quantile(&[3.0, 1.0, 2.0, 4.0], 0.5), Some(3.0));
        assert_eq!(quantile(&[3.0, 1.0, 2.0, 4.0], 0.95), Some(4.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
