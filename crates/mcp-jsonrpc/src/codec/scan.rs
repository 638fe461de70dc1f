//! Byte search for the codecs, without asking the CPU for its features.
//!
//! The `memchr` crate's top-level functions pick AVX2 at run time: their first call runs
//! `cpuid` for every feature leaf, and in a virtual machine each `cpuid` exits to the
//! hypervisor. Measured on a 2-vCPU VM: about 40 µs, once per process. A stdio server paid it on
//! its first frame, before answering `initialize`: about a twentieth of its cold start (the
//! benchmark's cold-start row). These are `memchr`'s portable word-at-a-time searchers: no
//! detection, and the frames and lines they scan are short. The stdio throughput rows lost
//! nothing when they replaced the AVX2 ones.

use memchr::arch::all::memchr::{One, Two};

/// The first `needle` in `haystack`.
pub(crate) fn find(needle: u8, haystack: &[u8]) -> Option<usize> {
    One::new(needle).find(haystack)
}

/// The first `a` or `b` in `haystack`.
pub(crate) fn find2(a: u8, b: u8, haystack: &[u8]) -> Option<usize> {
    Two::new(a, b).find(haystack)
}

/// Every position of `needle` in `haystack`, in order.
pub(crate) fn positions(needle: u8, haystack: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let one = One::new(needle);
    after_each(haystack, move |rest| one.find(rest))
}

/// Every position of `a` or `b` in `haystack`, in order.
pub(crate) fn positions2(a: u8, b: u8, haystack: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let two = Two::new(a, b);
    after_each(haystack, move |rest| two.find(rest))
}

/// The positions `find` reports, each search starting after the last match.
fn after_each<'h>(
    haystack: &'h [u8],
    find: impl Fn(&[u8]) -> Option<usize> + 'h,
) -> impl Iterator<Item = usize> + 'h {
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = from + find(haystack.get(from..)?)?;
        from = at + 1;
        Some(at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods)] // memchr's own searchers: the reference
    fn finds_what_memchr_finds() {
        let hay: Vec<u8> = (0..300u32)
            .map(|i| b"ab\ncd\r:ef"[(i * 7 % 9) as usize])
            .collect();
        for len in 0..hay.len() {
            let hay = &hay[..len];
            assert_eq!(find(b'\n', hay), memchr::memchr(b'\n', hay));
            assert_eq!(find2(b'\n', b'\r', hay), memchr::memchr2(b'\n', b'\r', hay));
            assert!(positions(b':', hay).eq(memchr::memchr_iter(b':', hay)));
            assert!(positions2(b'c', b'e', hay).eq(memchr::memchr2_iter(b'c', b'e', hay)));
        }
    }
}
