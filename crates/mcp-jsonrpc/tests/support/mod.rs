//! What the codec tests share.

/// `bytes` cut at `points` (each taken modulo the length + 1, so any number is a valid cut):
/// the pieces a reader may receive it in, some of them empty.
pub fn split(bytes: &[u8], mut points: Vec<usize>) -> Vec<&[u8]> {
    points.iter_mut().for_each(|p| *p %= bytes.len() + 1);
    points.sort_unstable();
    let mut out = Vec::new();
    let mut last = 0;
    for p in points {
        out.push(&bytes[last..p]);
        last = p;
    }
    out.push(&bytes[last..]);
    out
}
