//! `format` checks for draft-04, draft-06 and draft-07, where `format` is an assertion. None of
//! them allocates except `regex`.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::Draft;

/// A format this crate checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Date,
    DateTime,
    Time,
    Email,
    Hostname,
    /// draft-04 and draft-06: RFC 1034 syntax only.
    HostnameRfc1034,
    Ipv4,
    Ipv6,
    Uri,
    UriReference,
    JsonPointer,
    RelativeJsonPointer,
    Regex,
}

impl Format {
    /// The format `name` asserts in `draft`; `None` for formats that are only annotations
    /// (every format from 2019-09 on) and for formats this crate does not know.
    pub(crate) fn for_draft(draft: Draft, name: &str) -> Option<Format> {
        if draft >= Draft::D2019 {
            return None;
        }
        Some(match name {
            "date" => Format::Date,
            "date-time" => Format::DateTime,
            "time" => Format::Time,
            "email" => Format::Email,
            "hostname" if draft <= Draft::D6 => Format::HostnameRfc1034,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "uri" => Format::Uri,
            "uri-reference" if draft >= Draft::D6 => Format::UriReference,
            "json-pointer" if draft >= Draft::D6 => Format::JsonPointer,
            "relative-json-pointer" if draft >= Draft::D7 => Format::RelativeJsonPointer,
            "regex" => Format::Regex,
            _ => return None,
        })
    }

    pub(crate) fn is_valid(self, s: &str) -> bool {
        match self {
            Format::Date => is_date(s),
            Format::DateTime => is_date_time(s),
            Format::Time => is_time(s),
            Format::Email => is_email(s),
            Format::Hostname => is_hostname(s),
            Format::HostnameRfc1034 => is_ascii_hostname(s),
            Format::Ipv4 => Ipv4Addr::from_str(s).is_ok(),
            Format::Ipv6 => Ipv6Addr::from_str(s).is_ok(),
            Format::Uri => is_uri(s, true),
            Format::UriReference => is_uri(s, false),
            Format::JsonPointer => is_json_pointer(s),
            Format::RelativeJsonPointer => is_relative_json_pointer(s),
            Format::Regex => crate::pattern::translate(s).is_ok(),
        }
    }
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
}

/// RFC 3339 `full-date`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..]))
    else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 `full-time`: `HH:MM:SS[.frac](Z|±HH:MM)`; a leap second only at 23:59 UTC.
fn is_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) =
        (digits(&b[..2]), digits(&b[3..5]), digits(&b[6..8]))
    else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut i = 8;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    let (offset_minutes, rest) = match b.get(i) {
        Some(b'Z' | b'z') => (0i32, &b[i + 1..]),
        Some(sign @ (b'+' | b'-')) => {
            let o = &b[i + 1..];
            if o.len() != 5 || o[2] != b':' {
                return false;
            }
            let (Some(oh), Some(om)) = (digits(&o[..2]), digits(&o[3..])) else {
                return false;
            };
            if oh > 23 || om > 59 {
                return false;
            }
            let minutes = (oh * 60 + om) as i32;
            (
                if *sign == b'+' { minutes } else { -minutes },
                &b[b.len()..],
            )
        }
        _ => return false,
    };
    if !rest.is_empty() {
        return false;
    }
    if second == 60 {
        let local = (hour * 60 + minute) as i32;
        let utc = (local - offset_minutes).rem_euclid(24 * 60);
        return utc == 23 * 60 + 59;
    }
    true
}

fn is_date_time(s: &str) -> bool {
    match s.bytes().position(|b| b == b'T' || b == b't') {
        Some(t) => is_date(&s[..t]) && is_time(&s[t + 1..]),
        None => false,
    }
}

/// Letters, digits and hyphens; labels of 1 to 63, not starting or ending with a hyphen; at
/// most 253 in all, no trailing dot.
fn is_ascii_hostname(s: &str) -> bool {
    if s.is_empty() || s.len() > 253 {
        return false;
    }
    s.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    })
}

/// [`is_ascii_hostname`], and labels with `--` in their third and fourth positions must be
/// A-labels (`xn--` and valid Punycode) (RFC 5891).
fn is_hostname(s: &str) -> bool {
    is_ascii_hostname(s)
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            if b.len() >= 4 && b[2] == b'-' && b[3] == b'-' {
                b[..2].eq_ignore_ascii_case(b"xn") && punycode_decodes(&label[4..])
            } else {
                true
            }
        })
}

/// Whether `input` (the part of an A-label after `xn--`) is valid Punycode (RFC 3492) that
/// decodes to at least one non-ASCII code point.
fn punycode_decodes(input: &str) -> bool {
    const BASE: u32 = 36;
    const TMIN: u32 = 1;
    const TMAX: u32 = 26;
    let (basic, extended) = match input.rfind('-') {
        Some(p) => (&input[..p], &input[p + 1..]),
        None => ("", input),
    };
    if extended.is_empty() {
        return false;
    }
    let mut n: u32 = 128;
    let mut i: u32 = 0;
    let mut bias: u32 = 72;
    let mut length = basic.len() as u32;
    let mut bytes = extended.bytes().peekable();
    while bytes.peek().is_some() {
        let old_i = i;
        let mut w: u32 = 1;
        let mut k = BASE;
        loop {
            let Some(byte) = bytes.next() else {
                return false;
            };
            let digit = match byte {
                b'a'..=b'z' => u32::from(byte - b'a'),
                b'A'..=b'Z' => u32::from(byte - b'A'),
                b'0'..=b'9' => u32::from(byte - b'0') + 26,
                _ => return false,
            };
            let Some(next) = digit.checked_mul(w).and_then(|d| i.checked_add(d)) else {
                return false;
            };
            i = next;
            let t = if k <= bias {
                TMIN
            } else if k >= bias + TMAX {
                TMAX
            } else {
                k - bias
            };
            if digit < t {
                break;
            }
            let Some(next_w) = w.checked_mul(BASE - t) else {
                return false;
            };
            w = next_w;
            k += BASE;
        }
        length += 1;
        // Bias adaptation (RFC 3492, section 6.1).
        let mut delta = if old_i == 0 {
            (i - old_i) / 700
        } else {
            (i - old_i) / 2
        };
        delta += delta / length;
        let mut k = 0;
        while delta > ((BASE - TMIN) * TMAX) / 2 {
            delta /= BASE - TMIN;
            k += BASE;
        }
        bias = k + (BASE - TMIN + 1) * delta / (delta + 38);
        let Some(next_n) = n.checked_add(i / length) else {
            return false;
        };
        n = next_n;
        if char::from_u32(n).is_none() {
            return false;
        }
        i %= length;
        i += 1;
    }
    true
}

/// `local@domain` (RFC 5321): a dot-atom or quoted local part of at most 64 characters, and a
/// hostname or a bracketed IPv4 or `IPv6:` address literal.
fn is_email(s: &str) -> bool {
    let Some(at) = s.rfind('@') else {
        return false;
    };
    let (local, domain) = (&s[..at], &s[at + 1..]);
    if local.is_empty() || local.len() > 64 || domain.is_empty() || !local.is_ascii() {
        return false;
    }
    let local_ok = if let Some(quoted) = local.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
        let mut escaped = false;
        quoted.bytes().all(|b| {
            if escaped {
                escaped = false;
                (b' '..=b'~').contains(&b)
            } else if b == b'\\' {
                escaped = true;
                true
            } else {
                b != b'"' && (b' '..=b'~').contains(&b)
            }
        }) && !escaped
    } else {
        local.split('.').all(|atom| {
            !atom.is_empty()
                && atom
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~".contains(&b))
        })
    };
    if !local_ok {
        return false;
    }
    if let Some(literal) = domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        match literal.get(..5) {
            Some(tag) if tag.eq_ignore_ascii_case("IPv6:") => {
                Ipv6Addr::from_str(&literal[5..]).is_ok()
            }
            _ => Ipv4Addr::from_str(literal).is_ok(),
        }
    } else {
        is_hostname(domain)
    }
}

const UNRESERVED_OR_SUB_DELIM: &[u8] = b"-._~!$&'()*+,;=";

/// The end of the run from `at` of bytes that are unreserved, sub-delims, `extra`, or sound
/// percent-encodings; `None` on a broken percent-encoding.
fn scan(b: &[u8], mut at: usize, extra: &[u8]) -> Option<usize> {
    while let Some(&c) = b.get(at) {
        if c.is_ascii_alphanumeric() || UNRESERVED_OR_SUB_DELIM.contains(&c) || extra.contains(&c) {
            at += 1;
        } else if c == b'%' {
            if !b.get(at + 1..at + 3)?.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            at += 3;
        } else {
            break;
        }
    }
    Some(at)
}

/// RFC 3986 `URI` (`absolute`) or `URI-reference`.
fn is_uri(s: &str, absolute: bool) -> bool {
    let b = s.as_bytes();
    let scheme_end = b.first().filter(|c| c.is_ascii_alphabetic()).and_then(|_| {
        let end = b
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))?;
        (b[end] == b':').then_some(end)
    });
    if absolute && scheme_end.is_none() {
        return false;
    }
    let mut at = scheme_end.map_or(0, |e| e + 1);
    if b[at..].starts_with(b"//") {
        let start = at + 2;
        let end = b[start..]
            .iter()
            .position(|c| matches!(c, b'/' | b'?' | b'#'))
            .map_or(b.len(), |p| p + start);
        if !is_authority(&b[start..end]) {
            return false;
        }
        at = end;
    } else if scheme_end.is_none() {
        // A relative path's first segment cannot hold a colon (it would read as a scheme).
        let first = b[at..]
            .iter()
            .position(|c| matches!(c, b'/' | b'?' | b'#'))
            .map_or(&b[at..], |p| &b[at..at + p]);
        if first.contains(&b':') {
            return false;
        }
    }
    let Some(end) = scan(b, at, b":@/") else {
        return false;
    };
    at = end;
    if b.get(at) == Some(&b'?') {
        let Some(end) = scan(b, at + 1, b":@/?") else {
            return false;
        };
        at = end;
    }
    if b.get(at) == Some(&b'#') {
        let Some(end) = scan(b, at + 1, b":@/?") else {
            return false;
        };
        at = end;
    }
    at == b.len()
}

/// `[ userinfo "@" ] host [ ":" port ]`.
fn is_authority(a: &[u8]) -> bool {
    let host_port = match a.iter().rposition(|&c| c == b'@') {
        Some(p) => {
            if scan(&a[..p], 0, b":") != Some(p) {
                return false;
            }
            &a[p + 1..]
        }
        None => a,
    };
    let (host, port) = if host_port.first() == Some(&b'[') {
        let Some(close) = host_port.iter().position(|&c| c == b']') else {
            return false;
        };
        let literal = &host_port[1..close];
        let Ok(literal) = std::str::from_utf8(literal) else {
            return false;
        };
        let ok = if let Some(future) = literal.strip_prefix(['v', 'V']) {
            match future.split_once('.') {
                Some((version, rest)) => {
                    !version.is_empty()
                        && version.bytes().all(|c| c.is_ascii_hexdigit())
                        && !rest.is_empty()
                        && scan(rest.as_bytes(), 0, b":") == Some(rest.len())
                }
                None => false,
            }
        } else {
            Ipv6Addr::from_str(literal).is_ok()
        };
        if !ok {
            return false;
        }
        (&host_port[..=close], &host_port[close + 1..])
    } else {
        let end = host_port
            .iter()
            .position(|&c| c == b':')
            .unwrap_or(host_port.len());
        if scan(&host_port[..end], 0, b"") != Some(end) {
            return false;
        }
        (&host_port[..end], &host_port[end..])
    };
    let _ = host;
    match port.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    }
}

/// RFC 6901: empty, or `/`-prefixed tokens where `~` is followed by `0` or `1`.
fn is_json_pointer(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    if !s.starts_with('/') {
        return false;
    }
    let b = s.as_bytes();
    b.iter()
        .enumerate()
        .all(|(i, &c)| c != b'~' || matches!(b.get(i + 1), Some(b'0' | b'1')))
}

/// A non-negative integer without leading zeros, then `#` or a JSON pointer.
fn is_relative_json_pointer(s: &str) -> bool {
    let end = s
        .bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    if end == 0 || (end > 1 && s.starts_with('0')) {
        return false;
    }
    let rest = &s[end..];
    rest == "#" || is_json_pointer(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times() {
        assert!(is_date("2024-02-29"));
        assert!(!is_date("2023-02-29"));
        assert!(!is_date("2024-13-01"));
        assert!(!is_date("2024-1-01"));
        assert!(is_time("12:34:56Z"));
        assert!(is_time("12:34:56.789+05:30"));
        assert!(is_time("23:59:60Z"));
        assert!(!is_time("22:59:60Z"));
        assert!(is_time("15:59:60-08:00"));
        assert!(!is_time("12:34:56"));
        assert!(!is_time("24:00:00Z"));
        assert!(is_date_time("2024-01-01T00:00:00Z"));
        assert!(is_date_time("2024-01-01t00:00:00.5+01:00"));
        assert!(!is_date_time("2024-01-01 00:00:00Z"));
    }

    #[test]
    fn hosts_and_addresses() {
        assert!(is_hostname("example.com"));
        assert!(is_hostname("xn--bcher-kva.example"));
        assert!(!is_hostname("ab--cd.example"));
        assert!(is_ascii_hostname("ab--cd.example"));
        assert!(!is_hostname("-a.example"));
        assert!(!is_hostname("a..b"));
        assert!(!is_hostname(&"a".repeat(64)));
        assert!(is_email("joe.bloggs@example.com"));
        assert!(is_email("\"joe bloggs\"@example.com"));
        assert!(is_email("joe@[127.0.0.1]"));
        assert!(is_email("joe@[IPv6:::1]"));
        assert!(!is_email("joe..bloggs@example.com"));
        assert!(!is_email("joe@"));
        assert!(!is_email("example.com"));
    }

    #[test]
    fn uris_and_pointers() {
        assert!(is_uri("http://example.com/a?b=c#d", true));
        assert!(is_uri("urn:isbn:0451450523", true));
        assert!(is_uri("http://[::1]:8080/", true));
        assert!(!is_uri("//example.com", true));
        assert!(is_uri("//example.com", false));
        assert!(!is_uri("http://exa mple.com", true));
        assert!(!is_uri("http://example.com/%zz", true));
        assert!(!is_uri("a:b:c", false) || is_uri("a:b:c", true));
        assert!(!is_uri("1a:b", false));
        assert!(is_json_pointer("/a~0b/c~1d"));
        assert!(!is_json_pointer("/a~2"));
        assert!(!is_json_pointer("a"));
        assert!(is_relative_json_pointer("0#"));
        assert!(is_relative_json_pointer("1/a"));
        assert!(!is_relative_json_pointer("01/a"));
    }
}
