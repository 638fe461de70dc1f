//! ECMA-262 regular expressions (as JSON Schema's `pattern` has them, without the `u` flag) on
//! `regex-lite`.
//!
//! The two dialects agree on most syntax, and `regex-lite`'s `\d`, `\w` and `\b` are ASCII, as
//! ECMA-262's are. What differs is rewritten: `\s` and `.` get ECMA-262's character sets, a
//! literal `[` inside a class and a `{` that starts no quantifier are escaped, `[]` and `[^]`
//! become the empty and the full set, and `\cX`, `\0` and `\uXXXX` (with surrogate pairs) become
//! the code points they name. Look-around, backreferences and Unicode property escapes have no
//! `regex-lite` equivalent and are refused.
//!
//! The most common shape in tool schemas, a whole string of one character set (`^[a-z0-9_-]+$`,
//! `^\d*$`), is answered by a scan of the string and builds no regex.

use regex_lite::{Regex, RegexBuilder};

/// The most memory one compiled pattern may take.
const SIZE_LIMIT: usize = 1 << 20;
/// The deepest nesting of groups and repetitions a pattern may have.
const NEST_LIMIT: u32 = 64;

/// ECMA-262 `WhiteSpace` and `LineTerminator`, as class items.
const SPACE: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
/// The complement of [`SPACE`], as class items (`regex-lite` has no nested classes).
const NOT_SPACE: &str = r"\x00-\x08\x0E-\x1F\x21-\x{9F}\x{A1}-\x{167F}\x{1681}-\x{1FFF}\x{200B}-\x{2027}\x{202A}-\x{202E}\x{2030}-\x{205E}\x{2060}-\x{2FFF}\x{3001}-\x{FEFE}\x{FF00}-\x{10FFFF}";
/// What ECMA-262's `.` matches: anything but a line terminator.
const DOT: &str = r"[^\n\r\x{2028}\x{2029}]";
const NOTHING: &str = r"[^\x00-\x{10FFFF}]";
const ANYTHING: &str = r"[\x00-\x{10FFFF}]";

/// A compiled `pattern`.
#[derive(Debug)]
pub(crate) struct Pattern {
    source: Box<str>,
    matcher: Matcher,
}

#[derive(Debug)]
enum Matcher {
    /// The pattern is `^C+$` or `^C*$` for a character set `C` (as in `^[a-z0-9_-]+$` or
    /// `^\d+$`): answered by a scan, without building a regex.
    Whole(Whole),
    Regex(Regex),
}

/// Translates and builds a pattern with the size and nesting limits.
fn regex(source: &str) -> Result<Regex, String> {
    let translated = translate(source)?;
    RegexBuilder::new(&translated)
        .size_limit(SIZE_LIMIT)
        .nest_limit(NEST_LIMIT)
        .build()
        .map_err(|e| {
            let e = e.to_string();
            let first = e.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            format!("invalid or unsupported regular expression {source:?}: {first}")
        })
}

/// `^C+$` (`non_empty`) or `^C*$`.
#[derive(Debug)]
struct Whole {
    set: CharSet,
    non_empty: bool,
}

/// A set of characters as inclusive ranges, possibly negated.
#[derive(Debug)]
struct CharSet {
    ranges: Vec<(char, char)>,
    negated: bool,
}

impl CharSet {
    fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
}

/// Inclusive character ranges.
type Ranges = &'static [(char, char)];

const DIGIT: Ranges = &[('0', '9')];
const WORD: Ranges = &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
const SPACE_RANGES: Ranges = &[
    ('\t', '\r'),
    (' ', ' '),
    ('\u{A0}', '\u{A0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200A}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202F}', '\u{202F}'),
    ('\u{205F}', '\u{205F}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{FEFF}', '\u{FEFF}'),
];

/// Recognizes `^C+$` and `^C*$` where `C` is `\d`, `\w`, `\s` or their negations, or a class of
/// plain characters, ranges, `\d`, `\w`, `\s` and escaped punctuation. Anything else is left to
/// the regex engine.
fn whole(source: &str) -> Option<Whole> {
    let body = source.strip_prefix('^')?.strip_suffix('$')?;
    let (atom, non_empty) = if let Some(atom) = body.strip_suffix('+') {
        (atom, true)
    } else {
        (body.strip_suffix('*')?, false)
    };
    let perl = |c: char| -> Option<(Ranges, bool)> {
        Some(match c {
            'd' => (DIGIT, false),
            'D' => (DIGIT, true),
            'w' => (WORD, false),
            'W' => (WORD, true),
            's' => (SPACE_RANGES, false),
            'S' => (SPACE_RANGES, true),
            _ => return None,
        })
    };
    let set = if let Some(escape) = atom.strip_prefix('\\') {
        let mut chars = escape.chars();
        let (ranges, negated) = perl(chars.next()?)?;
        if chars.next().is_some() {
            return None;
        }
        CharSet {
            ranges: ranges.to_vec(),
            negated,
        }
    } else {
        let inner = atom.strip_prefix('[')?.strip_suffix(']')?;
        let (inner, negated) = match inner.strip_prefix('^') {
            Some(rest) => (rest, true),
            None => (inner, false),
        };
        let chars: Vec<char> = inner.chars().collect();
        if chars.is_empty() {
            return None;
        }
        let mut ranges = Vec::new();
        let mut i = 0;
        // One class atom: a plain or escaped character, or a set escape.
        let atom_at = |i: usize| -> Option<(Result<char, Ranges>, usize)> {
            match *chars.get(i)? {
                '\\' => {
                    let c = *chars.get(i + 1)?;
                    if let Some((set, false)) = perl(c) {
                        Some((Err(set), i + 2))
                    } else if c.is_ascii_punctuation() {
                        Some((Ok(c), i + 2))
                    } else {
                        None
                    }
                }
                '[' | ']' => None,
                c => Some((Ok(c), i + 1)),
            }
        };
        while i < chars.len() {
            let (first, next) = atom_at(i)?;
            match first {
                Err(set) => {
                    ranges.extend_from_slice(set);
                    i = next;
                }
                Ok(lo) => {
                    if chars.get(next) == Some(&'-') && next + 1 < chars.len() {
                        let (Ok(hi), after) = atom_at(next + 1)? else {
                            return None;
                        };
                        if lo > hi {
                            return None;
                        }
                        ranges.push((lo, hi));
                        i = after;
                    } else {
                        ranges.push((lo, lo));
                        i = next;
                    }
                }
            }
        }
        CharSet { ranges, negated }
    };
    Some(Whole { set, non_empty })
}

impl Pattern {
    /// Compiles an ECMA-262 pattern; the error says why it cannot be used.
    pub(crate) fn new(source: &str) -> Result<Pattern, String> {
        let matcher = match whole(source) {
            Some(whole) => Matcher::Whole(whole),
            None => Matcher::Regex(regex(source)?),
        };
        Ok(Pattern {
            source: source.into(),
            matcher,
        })
    }

    /// An unanchored search.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Matcher::Whole(whole) => {
                (!whole.non_empty || !text.is_empty())
                    && text.chars().all(|c| whole.set.contains(c))
            }
            Matcher::Regex(regex) => regex.is_match(text),
        }
    }

    pub(crate) fn source(&self) -> &str {
        &self.source
    }
}

fn unsupported(source: &[char], what: &str) -> String {
    let source: String = source.iter().collect();
    format!("regular expression {source:?} uses {what}, which is not supported")
}

/// Rewrites an ECMA-262 pattern into `regex-lite` syntax.
pub(crate) fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => i = escape(&chars, i + 1, &mut out, false)?.0,
            '[' => i = class(&chars, i + 1, &mut out)?,
            '(' => {
                if chars.get(i + 1) == Some(&'?') {
                    match (chars.get(i + 2), chars.get(i + 3)) {
                        (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => {
                            return Err(unsupported(&chars, "a look-around assertion"));
                        }
                        _ => {}
                    }
                }
                out.push('(');
                i += 1;
            }
            '.' => {
                out.push_str(DOT);
                i += 1;
            }
            '{' => match quantifier_end(&chars, i) {
                Some(end) => {
                    out.extend(&chars[i..=end]);
                    i = end + 1;
                }
                None => {
                    out.push_str(r"\{");
                    i += 1;
                }
            },
            '}' => {
                out.push_str(r"\}");
                i += 1;
            }
            ']' => {
                out.push_str(r"\]");
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The index of the `}` closing a `{n}`, `{n,}` or `{n,m}` quantifier starting at `start`.
fn quantifier_end(chars: &[char], start: usize) -> Option<usize> {
    let mut i = start + 1;
    let digits = |i: &mut usize| {
        let from = *i;
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        *i > from
    };
    if !digits(&mut i) {
        return None;
    }
    if chars.get(i) == Some(&',') {
        i += 1;
        digits(&mut i);
    }
    (chars.get(i) == Some(&'}')).then_some(i)
}

/// One piece of a character class.
enum Item {
    Char(char),
    /// Already in `regex-lite` syntax (`\d`, a nested class).
    Set(String),
    /// A lone surrogate: matches nothing in a Rust string.
    Nothing,
}

fn push_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() || c == ' ' || c == '_' {
        out.push(c);
    } else {
        out.push_str(&format!(r"\x{{{:X}}}", u32::from(c)));
    }
}

/// Parses a class body after `[`; returns the index after its `]`.
fn class(chars: &[char], mut i: usize, out: &mut String) -> Result<usize, String> {
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        out.push_str(if negated { ANYTHING } else { NOTHING });
        return Ok(i + 1);
    }
    let mut body = String::new();
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(format!(
                "invalid regular expression {:?}: unclosed character class",
                chars.iter().collect::<String>()
            ));
        };
        if c == ']' {
            i += 1;
            break;
        }
        let (first, next) = class_atom(chars, i)?;
        i = next;
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&c| c != ']') {
            let (second, after) = class_atom(chars, i + 1)?;
            match (&first, &second) {
                (Item::Char(a), Item::Char(b)) => {
                    if a > b {
                        return Err(format!(
                            "invalid regular expression {:?}: character class range out of order",
                            chars.iter().collect::<String>()
                        ));
                    }
                    push_char(&mut body, *a);
                    body.push('-');
                    push_char(&mut body, *b);
                }
                // A class escape cannot bound a range: both ends and the `-` are literal.
                _ => {
                    push_item(&mut body, first);
                    push_char(&mut body, '-');
                    push_item(&mut body, second);
                }
            }
            i = after;
        } else {
            push_item(&mut body, first);
        }
    }
    if body.is_empty() {
        out.push_str(if negated { ANYTHING } else { NOTHING });
    } else {
        out.push('[');
        if negated {
            out.push('^');
        }
        out.push_str(&body);
        out.push(']');
    }
    Ok(i)
}

fn push_item(body: &mut String, item: Item) {
    match item {
        Item::Char(c) => push_char(body, c),
        Item::Set(s) => body.push_str(&s),
        Item::Nothing => {}
    }
}

fn class_atom(chars: &[char], i: usize) -> Result<(Item, usize), String> {
    let c = chars[i];
    if c != '\\' {
        return Ok((Item::Char(c), i + 1));
    }
    let mut piece = String::new();
    let (next, item) = escape(chars, i + 1, &mut piece, true)?;
    Ok((item.unwrap_or(Item::Set(piece)), next))
}

fn hex(chars: &[char], from: usize, count: usize) -> Option<u32> {
    let digits = chars.get(from..from + count)?;
    digits.iter().try_fold(0u32, |acc, c| {
        acc.checked_mul(16)?.checked_add(c.to_digit(16)?)
    })
}

/// Translates the escape whose letter is at `i`. Outside a class the translation is written to
/// `out`; inside one a single character comes back as an [`Item`] (and sets are written to
/// `out`). Returns the index after the escape.
fn escape(
    chars: &[char],
    i: usize,
    out: &mut String,
    in_class: bool,
) -> Result<(usize, Option<Item>), String> {
    let Some(&c) = chars.get(i) else {
        return Err(format!(
            "invalid regular expression {:?}: it ends with a backslash",
            chars.iter().collect::<String>()
        ));
    };
    let literal = |c: char, out: &mut String| -> Option<Item> {
        if in_class {
            Some(Item::Char(c))
        } else {
            push_char(out, c);
            None
        }
    };
    let invalid = |what: &str| {
        format!(
            "invalid or unsupported regular expression {:?}: {what}",
            chars.iter().collect::<String>()
        )
    };
    Ok(match c {
        'd' | 'D' | 'w' | 'W' => {
            out.push('\\');
            out.push(c);
            (i + 1, None)
        }
        'b' | 'B' if !in_class => {
            out.push('\\');
            out.push(c);
            (i + 1, None)
        }
        // `[\b]` is a backspace.
        'b' => (i + 1, Some(Item::Char('\u{8}'))),
        'B' => return Err(invalid("\\B in a character class")),
        's' => {
            if in_class {
                out.push_str(SPACE);
            } else {
                out.push('[');
                out.push_str(SPACE);
                out.push(']');
            }
            (i + 1, None)
        }
        'S' => {
            if in_class {
                out.push_str(NOT_SPACE);
            } else {
                out.push('[');
                out.push_str(NOT_SPACE);
                out.push(']');
            }
            (i + 1, None)
        }
        't' => (i + 1, literal('\t', out)),
        'n' => (i + 1, literal('\n', out)),
        'r' => (i + 1, literal('\r', out)),
        'v' => (i + 1, literal('\u{B}', out)),
        'f' => (i + 1, literal('\u{C}', out)),
        '0' if !chars.get(i + 1).is_some_and(char::is_ascii_digit) => (i + 1, literal('\0', out)),
        '0'..='9' => {
            return Err(unsupported(chars, "a backreference or an octal escape"));
        }
        'k' => return Err(unsupported(chars, "a named backreference")),
        'p' | 'P' => return Err(unsupported(chars, "a Unicode property escape")),
        'c' => match chars.get(i + 1) {
            Some(l) if l.is_ascii_alphabetic() => {
                let code = u32::from(*l) % 32;
                (i + 2, literal(char::from_u32(code).unwrap_or('\0'), out))
            }
            _ => return Err(invalid("\\c must be followed by a letter")),
        },
        'x' => match hex(chars, i + 1, 2) {
            Some(code) => (i + 3, literal(char::from_u32(code).unwrap_or('\0'), out)),
            None => return Err(invalid("\\x must be followed by two hex digits")),
        },
        'u' => {
            if chars.get(i + 1) == Some(&'{') {
                let close = chars[i + 2..]
                    .iter()
                    .position(|&c| c == '}')
                    .map(|p| p + i + 2)
                    .ok_or_else(|| invalid("unclosed \\u{...}"))?;
                let digits = close - (i + 2);
                let code = Some(digits)
                    .filter(|d| (1..=6).contains(d))
                    .and_then(|d| hex(chars, i + 2, d))
                    .ok_or_else(|| invalid("bad \\u{...}"))?;
                match char::from_u32(code) {
                    Some(c) => (close + 1, literal(c, out)),
                    None if (0xD800..0xE000).contains(&code) => (close + 1, nothing(out, in_class)),
                    None => return Err(invalid("\\u{...} past U+10FFFF")),
                }
            } else {
                let Some(unit) = hex(chars, i + 1, 4) else {
                    return Err(invalid("\\u must be followed by four hex digits"));
                };
                let after = i + 5;
                if (0xD800..0xDC00).contains(&unit)
                    && chars.get(after) == Some(&'\\')
                    && chars.get(after + 1) == Some(&'u')
                {
                    if let Some(low) =
                        hex(chars, after + 2, 4).filter(|l| (0xDC00..0xE000).contains(l))
                    {
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        let c = char::from_u32(code).unwrap_or('\0');
                        return Ok((after + 6, literal(c, out)));
                    }
                }
                match char::from_u32(unit) {
                    Some(c) => (after, literal(c, out)),
                    None => (after, nothing(out, in_class)),
                }
            }
        }
        // Identity escapes of syntax characters (and any other ASCII punctuation).
        c if c.is_ascii_punctuation() => (i + 1, literal(c, out)),
        c if c.is_ascii_alphanumeric() => {
            return Err(invalid(&format!("unknown escape \\{c}")));
        }
        c => (i + 1, literal(c, out)),
    })
}

fn nothing(out: &mut String, in_class: bool) -> Option<Item> {
    if in_class {
        Some(Item::Nothing)
    } else {
        out.push_str(NOTHING);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        Pattern::new(pattern).unwrap().is_match(text)
    }

    #[test]
    fn ascii_classes_and_anchors() {
        assert!(m(r"^\d+$", "123"));
        assert!(!m(r"^\d+$", "١٢٣"), "Arabic-Indic digits are not \\d");
        assert!(m(r"^\w+$", "a_Z9"));
        assert!(!m(r"^\w+$", "é"));
        assert!(m(r"\bfoo\b", "a foo b"));
        assert!(
            !m(r"^abc$", "abc\n"),
            "$ does not match before a final newline"
        );
        assert!(m("b", "abc"), "unanchored");
    }

    #[test]
    fn ecma_space_and_dot() {
        assert!(m(r"^\s$", "\u{a0}"));
        assert!(m(r"^\s$", "\u{feff}"));
        assert!(m(r"^\S$", "x"));
        assert!(!m(r"^\S$", "\u{2003}"));
        assert!(m(r"^[\s]$", "\u{3000}"));
        assert!(m(r"^[^\S]$", " "));
        assert!(!m(r"^[^\S]$", "x"));
        assert!(m(r"^[\S]$", "\u{10FFFF}"));
        assert!(m(r"^[\S\s]$", "\u{2029}"));
        assert!(m(r"^\S$", "\u{FEFE}"));
        assert!(!m(r"^\S$", "\u{FEFF}"));
        assert!(!m(r"^.$", "\r"));
        assert!(!m(r"^.$", "\u{2028}"));
        assert!(m(r"^.$", "é"));
    }

    #[test]
    fn class_syntax() {
        assert!(m(r"^[[]$", "["));
        assert!(m(r"^[a-c-e]+$", "a-e"));
        assert!(m(r"^[\w-]+$", "a-b"));
        assert!(m(r"^[\d-z]+$", "1-z"));
        assert!(!m(r"^[\d-z]+$", "y"));
        assert!(m(r"^[&&~~]+$", "&~"));
        assert!(!m(r"[]", "a"));
        assert!(m(r"^[^]$", "\n"));
        assert!(m(r"^[\b]$", "\u{8}"));
        assert!(m(r"^[\]]$", "]"));
        assert!(m(r"^[.]$", "."));
        assert!(!m(r"^[.]$", "a"));
        assert!(Pattern::new("[z-a]").is_err());
        assert!(Pattern::new("[a").is_err());
    }

    #[test]
    fn escapes() {
        assert!(m(r"^\cJ$", "\n"));
        assert!(m(r"^\x41\u0042$", "AB"));
        assert!(m(r"^\uD83D\uDE00$", "😀"));
        assert!(m(r"^\u{1F600}$", "😀"));
        assert!(!m(r"\uD83D", "😀"));
        assert!(m(r"^\0$", "\0"));
        assert!(m(r"^\/\.\-$", "/.-"));
        assert!(m(r"^\<\>$", "<>"));
        assert!(m(r"^a{$", "a{"));
        assert!(m(r"^a{1,}$", "aaa"));
        assert!(m(r"^a{,2}$", "a{,2}"));
        assert!(m(r"^}$", "}"));
        assert!(m(r"^a\{2\}$", "a{2}"));
    }

    #[test]
    fn long_code_point_escapes_are_refused_without_overflow() {
        // Found by the fuzz target: the digits overflowed `u32` before their count was checked.
        for pattern in [
            r"\u{A77777777777777777777777777777777777}",
            r"[\u{FFFFFFFFF}]",
            r"\u{0000001}",
            r"\u{}",
            r"\u{110000}",
        ] {
            assert!(Pattern::new(pattern).is_err(), "{pattern}");
        }
        assert!(m(r"^\u{10FFFF}$", "\u{10FFFF}"));
    }

    #[test]
    fn unsupported_constructs_are_errors_naming_the_pattern() {
        for p in [
            r"(?=a)",
            r"(?!a)",
            r"(?<=a)b",
            r"(?<!a)b",
            r"(a)\1",
            r"(?<n>a)\k<n>",
            r"\p{L}",
            r"\a",
            r"\z",
            r"a\",
            r"(",
            r"*a",
        ] {
            let e = Pattern::new(p).unwrap_err();
            assert!(e.contains(&format!("{p:?}")), "{p}: {e}");
        }
        assert!(Pattern::new(r"(?<year>\d{4})").is_ok());
        assert!(Pattern::new(r"(?:ab)+").is_ok());
    }

    #[test]
    fn whole_string_scans_agree_with_the_regex() {
        let patterns = [
            r"^[a-z0-9_-]+$",
            r"^[A-Za-z]*$",
            r"^\d+$",
            r"^\S*$",
            r"^\s+$",
            r"^\W+$",
            r"^[^a-c]+$",
            r"^[\w.\-]+$",
            r"^[-a]+$",
            r"^[a-]+$",
            r"^[\d\s]*$",
            r"^[é-ü]+$",
        ];
        let texts = [
            "", "a", "abc", "a-b_c", "A", "1", "123", "12a", " ", "\u{a0}", "\t\n", "a b", "é",
            "ü", "ÿ", "-", ".", "a.b", "😀", "x\n", "\n",
        ];
        for p in patterns {
            let fast = Pattern::new(p).unwrap();
            assert!(matches!(fast.matcher, Matcher::Whole(_)), "{p}");
            let engine = regex(p).unwrap();
            for t in texts {
                assert_eq!(fast.is_match(t), engine.is_match(t), "{p} on {t:?}");
            }
        }
        for p in [
            r"^a+$",
            r"^[a-z]+",
            r"^[a-z]{2}$",
            r"^(a)+$",
            r"^[\b]+$",
            r"^[\S]+$",
        ] {
            let p = Pattern::new(p).unwrap();
            // `^a+$` is a one-character class too; the others must use the engine.
            assert!(
                matches!(p.matcher, Matcher::Regex(_)) || p.source() == "^a+$",
                "{}",
                p.source()
            );
        }
    }

    #[test]
    fn size_is_bounded() {
        assert!(Pattern::new("(((a{100}){100}){100})").is_err());
        let deep = "(".repeat(200) + &")".repeat(200);
        assert!(Pattern::new(&deep).is_err());
    }
}
