//! The regular expressions of schemas (`pattern`, `patternProperties`), searched as the
//! reference's validator searches them (`re.search`): Python's `re` syntax translated to
//! the regex engine's ([`translate`]), each pattern compiled once within a budget that
//! the patterns of one validation share ([`Patterns`]).
//!
//! What Python reads otherwise than the engine is written out: a `$` (outside MULTILINE)
//! also matches before a final newline, `\Z` is the end, `^` the start (outside
//! MULTILINE), `\s` also takes `\x1c`-`\x1f`, a `{` that starts no repetition is a
//! `{`, `&&`, `--`, `~~` and `[` inside a class are themselves, `\<` is `<`, the
//! `(?x)`, `(?s)`, `(?m)` and `(?a)` flags and octal, `\x`, `\u` and `\U` escapes as
//! Python reads them. What the engine cannot do (look-around, backreferences,
//! conditionals, atomic groups and possessive repetitions, `\N{...}`, a `$` with more
//! of the pattern after it, ASCII-only case folding) and what Python refuses is an
//! `Err` saying so: such a pattern cannot be checked. Two differences remain: `\w`
//! (and so `\b`) is Unicode's word class (letters, marks, decimal digits, connector
//! punctuation), where Python's takes letters and every numeric character but no marks;
//! and the two may know different versions of Unicode.

use std::collections::HashMap;

use regex_automata::Input;
use regex_automata::nfa::thompson::{self, WhichCaptures, pikevm::PikeVM};
use regex_automata::util::syntax;

/// The most bytes a pattern's compiled form (its automaton and search state) may take.
pub const PATTERN_BYTES: usize = 4 << 20;
/// The most bytes the compiled patterns of one validation may take together.
pub const TOTAL_BYTES: usize = 32 << 20;
/// The longest pattern compiled, in bytes.
pub const PATTERN_TEXT: usize = 32 << 10;
/// The most search steps (a pattern's states times the bytes of a text it searches, a
/// bound of the engine's work) one validation may take.
pub const SEARCH_STEPS: u64 = 2_000_000_000;
/// How deep groups may nest.
const MAX_NESTING: usize = 100;

/// The patterns of one validation, each compiled when first searched with; a pattern
/// that cannot be (see [`translate`]), or that would take more than [`PATTERN_BYTES`]
/// or the rest of [`TOTAL_BYTES`], is kept as the reason why.
#[derive(Default)]
pub struct Patterns {
    compiled: HashMap<String, Result<Compiled, String>>,
    /// Bytes of the patterns compiled so far, and of the attempts stopped by their limit.
    spent: usize,
    /// Search steps taken so far.
    steps: u64,
}

struct Compiled {
    main: Program,
    /// For the empty text, when it differs (Python's `\B` does not match there).
    on_empty: Option<Program>,
}

/// A pattern in the engine's syntax, compiled.
struct Program {
    vm: PikeVM,
    cache: thompson::pikevm::Cache,
    /// The automaton's states: a search visits each at most once a byte.
    states: u64,
}

impl Patterns {
    /// Whether Python's `re.search(pattern, text)` finds a match; `Err` says why the
    /// pattern cannot be checked.
    pub fn search(&mut self, pattern: &str, text: &str) -> Result<bool, String> {
        if !self.compiled.contains_key(pattern) {
            let compiled = compile(pattern, &mut self.spent);
            self.compiled.insert(pattern.to_string(), compiled);
        }
        let Some(found) = self.compiled.get_mut(pattern) else { return Err("not compiled".into()) };
        let c = found.as_mut().map_err(|why| why.clone())?;
        let c = match (&mut c.on_empty, text.is_empty()) {
            (Some(program), true) => program,
            _ => &mut c.main,
        };
        let cost = c.states.saturating_mul(u64::try_from(text.len()).unwrap_or(u64::MAX).saturating_add(1));
        if self.steps.saturating_add(cost) > SEARCH_STEPS {
            return Err(format!(
                "the validation has taken the {SEARCH_STEPS} search steps its patterns may take (a text of {} bytes)",
                text.len()
            ));
        }
        self.steps += cost;
        Ok(c.vm.is_match(&mut c.cache, Input::new(text)))
    }

    /// The bytes the patterns compiled so far take (and the attempts their limit stopped).
    #[cfg(test)]
    pub fn spent(&self) -> usize {
        self.spent
    }
}

/// `pattern` translated and compiled within what `spent` leaves of [`TOTAL_BYTES`] (and
/// at most [`PATTERN_BYTES`]), `spent` charged with what it took.
fn compile(pattern: &str, spent: &mut usize) -> Result<Compiled, String> {
    if pattern.len() > PATTERN_TEXT {
        return Err(format!("it is {} bytes long, over the {} bytes a pattern may be", pattern.len(), PATTERN_TEXT));
    }
    let translated = translate(pattern)?;
    let main = build(&translated.text, spent)?;
    let on_empty = translated.on_empty.map(|text| build(&text, spent)).transpose()?;
    Ok(Compiled { main, on_empty })
}

/// `translated` (the engine's syntax) compiled, as [`compile`].
fn build(translated: &str, spent: &mut usize) -> Result<Program, String> {
    let left = TOTAL_BYTES.saturating_sub(*spent);
    let spent_out = || format!("the compile budget of a validation's patterns ({} MiB) is spent", TOTAL_BYTES >> 20);
    if left < PATTERN_BYTES / 64 {
        return Err(spent_out());
    }
    let limit = PATTERN_BYTES.min(left);
    let built = PikeVM::builder()
        .syntax(syntax::Config::new())
        .thompson(thompson::Config::new().nfa_size_limit(Some(limit)).which_captures(WhichCaptures::Implicit))
        .build(translated);
    match built {
        Ok(vm) => {
            let cache = vm.create_cache();
            *spent = spent.saturating_add(vm.get_nfa().memory_usage() + cache.memory_usage() + translated.len());
            let states = u64::try_from(vm.get_nfa().states().len()).unwrap_or(u64::MAX);
            Ok(Program { vm, cache, states })
        }
        Err(e) if e.size_limit().is_some() => {
            *spent = spent.saturating_add(limit);
            Err(if limit < PATTERN_BYTES {
                spent_out()
            } else {
                format!("it compiles to more than the {} MiB a pattern may take", PATTERN_BYTES >> 20)
            })
        }
        Err(e) => Err(format!("it does not compile: {}", one_line(&e.to_string()))),
    }
}

/// An engine's message on one line.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The flags of Python's `re` that bear on a part of a pattern.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Flags {
    /// IGNORECASE (`i`).
    case: bool,
    /// MULTILINE (`m`).
    multiline: bool,
    /// DOTALL (`s`).
    dotall: bool,
    /// VERBOSE (`x`).
    verbose: bool,
    /// ASCII (`a`).
    ascii: bool,
}

/// A pattern parsed: the parts the engine's syntax is written from.
enum Node {
    /// One thing that matches a character (a literal, a class, `.`), in the engine's syntax.
    Atom(String),
    /// A zero-width assertion (`\A`, `\z`, `\b`...), in the engine's syntax: Python
    /// repeats none.
    Assert(String),
    /// Python's `\B`, as the engine writes it: it does not match in the empty text.
    NotBoundary(String),
    /// Python's `$` outside MULTILINE: the end, or before a newline that ends the text.
    End,
    /// A group, with the case flag when it changes.
    Group(Option<bool>, Box<Node>),
    Concat(Vec<Node>),
    Alternation(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
        lazy: bool,
    },
}

/// A pattern in the engine's syntax.
#[derive(Debug)]
pub struct Translated {
    pub text: String,
    /// The pattern for the empty text, when it differs there (a `\B`).
    pub on_empty: Option<String>,
}

/// Python's `pattern` written in the engine's syntax, to match what Python's
/// `re.search` matches; `Err` says why it cannot be (the engine cannot do it, or Python
/// refuses the pattern).
///
/// # Errors
/// What the engine cannot express, and what Python refuses, named.
pub fn translate(pattern: &str) -> Result<Translated, String> {
    let mut p = Parser { chars: pattern.chars().collect(), at: 0, not_boundary: false };
    let mut flags = Flags::default();
    let node = p.alternation(&mut flags, 0)?;
    if p.peek().is_some() {
        // Only a `)` stops the top level early.
        return Err(refused("unbalanced parenthesis"));
    }
    let written = |empty: bool| -> Result<String, String> {
        let mut out = String::new();
        if flags.case {
            out.push_str("(?i)");
        }
        emit(&node, true, empty, &mut out)?;
        Ok(out)
    };
    Ok(Translated { text: written(false)?, on_empty: if p.not_boundary { Some(written(true)?) } else { None } })
}

/// A pattern Python refuses: the reference cannot check it either.
fn refused(why: &str) -> String {
    format!("Python refuses it ({why})")
}

/// A pattern Python reads that the engine cannot match as Python does.
fn unsupported(what: &str) -> String {
    format!("{what} is not supported by rasdf's regular expressions")
}

/// Writes `node` (`last`: nothing of the pattern after it; `empty`: for the empty text).
fn emit(node: &Node, last: bool, empty: bool, out: &mut String) -> Result<(), String> {
    match node {
        Node::Atom(s) | Node::Assert(s) => out.push_str(s),
        Node::NotBoundary(_) if empty => out.push_str(NOTHING),
        Node::NotBoundary(s) => out.push_str(s),
        Node::End if last => out.push_str(r"(?:\n?\z)"),
        Node::End => return Err(unsupported("a `$` with more of the pattern after it")),
        Node::Group(case, inner) => {
            out.push_str(match case {
                None => "(?:",
                Some(true) => "(?i:",
                Some(false) => "(?-i:",
            });
            emit(inner, last, empty, out)?;
            out.push(')');
        }
        Node::Concat(items) => {
            for (i, item) in items.iter().enumerate() {
                emit(item, last && i + 1 == items.len(), empty, out)?;
            }
        }
        Node::Alternation(branches) => {
            for (i, branch) in branches.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                emit(branch, last, empty, out)?;
            }
        }
        Node::Repeat { node, min, max, lazy } => {
            emit(node, last && max.is_some_and(|m| m <= 1), empty, out)?;
            match max {
                Some(max) if *max == *min => out.push_str(&format!("{{{min}}}")),
                Some(max) => out.push_str(&format!("{{{min},{max}}}")),
                None => out.push_str(&format!("{{{min},}}")),
            }
            if *lazy {
                out.push('?');
            }
        }
    }
    Ok(())
}

/// Python's largest repetition count is one less.
const MAX_REPEAT: u64 = u32::MAX as u64;

struct Parser {
    chars: Vec<char>,
    at: usize,
    /// Whether a `\B` was met.
    not_boundary: bool,
}

/// A character as the engine writes it (a code point Python allows, the surrogates too).
fn written(c: u32) -> String {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() || ch == '_' => ch.to_string(),
        Some(_) => format!("\\x{{{c:X}}}"),
        // A surrogate is in no text: a class of nothing.
        None => NOTHING.to_string(),
    }
}

/// A class no character is in.
const NOTHING: &str = r"[^\x{0}-\x{10FFFF}]";

/// The characters Python's `\s` takes beyond the engine's (Unicode's White_Space): the
/// four information separators, which `str.isspace` counts.
const SPACE: &str = r"\s\x{1C}-\x{1F}";
const ASCII_SPACE: &str = r"\t-\r ";
const ASCII_WORD: &str = "0-9A-Za-z_";

/// An item of a class: a range of code points, or a class of the engine's (`\d`, a
/// nested class) written out.
enum Item {
    Range(u32, u32),
    Class(String),
}

/// Python's `\d`, `\w`, `\s` and their negations, as a class of the engine's: `inner`
/// for the inside of a class.
fn category(c: char, flags: Flags, inner: bool) -> String {
    let (set, negated) = match (c, flags.ascii) {
        ('d' | 'D', false) => (r"\d", c == 'D'),
        ('w' | 'W', false) => (r"\w", c == 'W'),
        ('s' | 'S', false) => (SPACE, c == 'S'),
        ('d' | 'D', true) => ("0-9", c == 'D'),
        ('w' | 'W', true) => (ASCII_WORD, c == 'W'),
        (_, true) => (ASCII_SPACE, c == 'S'),
        _ => (SPACE, c == 'S'),
    };
    match (negated, inner) {
        (true, _) => format!("[^{set}]"),
        (false, true) => set.to_string(),
        (false, false) => format!("[{set}]"),
    }
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.at += 1;
        }
        found
    }

    /// Skips what VERBOSE skips outside a class: whitespace, and `#` to the line's end.
    fn skip_verbose(&mut self) {
        while let Some(c) = self.peek() {
            if " \t\n\r\x0b\x0c".contains(c) {
                self.at += 1;
            } else if c == '#' {
                while let Some(c) = self.next() {
                    if c == '\n' {
                        break;
                    }
                }
            } else {
                break;
            }
        }
    }

    /// Branches separated by `|`, up to a `)` or the end. `flags` are the group's; at
    /// the top level (`depth` 0), the global flags of its start change them.
    fn alternation(&mut self, flags: &mut Flags, depth: usize) -> Result<Node, String> {
        if depth > MAX_NESTING {
            return Err(unsupported(&format!("groups nested more than {MAX_NESTING} deep")));
        }
        let mut branches = vec![self.sequence(flags, depth, true)?];
        while self.eat('|') {
            branches.push(self.sequence(flags, depth, false)?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Concat(Vec::new()))
        } else {
            Node::Alternation(branches)
        })
    }

    fn sequence(&mut self, flags: &mut Flags, depth: usize, first: bool) -> Result<Node, String> {
        let mut items: Vec<Node> = Vec::new();
        loop {
            if flags.verbose {
                self.skip_verbose();
            }
            let Some(c) = self.peek() else { break };
            if c == '|' || c == ')' {
                break;
            }
            self.at += 1;
            let quantifier = match c {
                '*' => Some((0, None)),
                '+' => Some((1, None)),
                '?' => Some((0, Some(1))),
                '{' => self.counts()?,
                _ => None,
            };
            if let Some((min, max)) = quantifier {
                let Some(last) = items.pop() else { return Err(refused("nothing to repeat")) };
                if matches!(last, Node::Assert(_) | Node::NotBoundary(_) | Node::End) {
                    return Err(refused("nothing to repeat"));
                }
                if matches!(last, Node::Repeat { .. }) {
                    return Err(refused("multiple repeat"));
                }
                let lazy = self.eat('?');
                if !lazy && self.peek() == Some('+') {
                    return Err(unsupported("a possessive repetition"));
                }
                items.push(Node::Repeat { node: Box::new(last), min, max, lazy });
                continue;
            }
            let item = match c {
                '{' => Node::Atom(written(u32::from('{'))),
                '.' => Node::Atom(if flags.dotall { "(?s:.)".into() } else { ".".into() }),
                '^' => Node::Assert(if flags.multiline { "(?m:^)".into() } else { r"\A".into() }),
                '$' if flags.multiline => Node::Assert("(?m:$)".into()),
                '$' => Node::End,
                '\\' => self.escape(*flags)?,
                '[' => Node::Atom(self.class(*flags)?),
                '(' => match self.group(flags, depth, first && items.is_empty())? {
                    Some(node) => node,
                    None => continue,
                },
                c => Node::Atom(written(u32::from(c))),
            };
            items.push(item);
        }
        Ok(if items.len() == 1 { items.pop().unwrap_or(Node::Concat(Vec::new())) } else { Node::Concat(items) })
    }

    /// After a `{`: a repetition's counts (`{m}`, `{m,}`, `{,n}`, `{m,n}`, `{,}`), or
    /// `None` (and nothing read) when it is no repetition but a `{`, as Python reads it.
    fn counts(&mut self) -> Result<Option<(u32, Option<u32>)>, String> {
        let here = self.at;
        if self.peek() == Some('}') {
            return Ok(None);
        }
        let number = |p: &mut Parser| -> Result<Option<u64>, String> {
            let mut n: Option<u64> = None;
            while let Some(d) = p.peek().and_then(|c| c.to_digit(10)) {
                p.at += 1;
                let v = n.unwrap_or(0).saturating_mul(10).saturating_add(u64::from(d));
                n = Some(v.min(MAX_REPEAT));
            }
            match n {
                Some(v) if v >= MAX_REPEAT => Err(refused("the repetition number is too large")),
                _ => Ok(n),
            }
        };
        let lo = number(self)?;
        let hi = if self.eat(',') { number(self)? } else { lo };
        if !self.eat('}') {
            self.at = here;
            return Ok(None);
        }
        let min = lo.unwrap_or(0);
        if let Some(max) = hi
            && max < min
        {
            return Err(refused("min repeat greater than max repeat"));
        }
        let to_u32 = |v: u64| u32::try_from(v).map_err(|_| refused("the repetition number is too large"));
        Ok(Some((to_u32(min)?, hi.map(to_u32).transpose()?)))
    }

    /// After a `\` outside a class.
    fn escape(&mut self, flags: Flags) -> Result<Node, String> {
        let Some(c) = self.next() else { return Err(refused("bad escape (end of pattern)")) };
        let atom = |s: String| Ok(Node::Atom(s));
        match c {
            'A' => Ok(Node::Assert(r"\A".into())),
            'Z' => Ok(Node::Assert(r"\z".into())),
            'b' if flags.ascii => Ok(Node::Assert(r"(?-u:\b)".into())),
            'b' => Ok(Node::Assert(r"\b".into())),
            'B' => {
                self.not_boundary = true;
                Ok(Node::NotBoundary(if flags.ascii { r"(?-u:\B)".into() } else { r"\B".into() }))
            }
            'd' | 'D' | 'w' | 'W' | 's' | 'S' => atom(category(c, flags, false)),
            '0' => {
                let v = self.octal(0, 2);
                atom(written(v))
            }
            '1'..='9' => {
                // Three octal digits are a character; anything else a group's number.
                let octal = |c: Option<char>| c.is_some_and(|c| ('0'..='7').contains(&c));
                if octal(Some(c)) && octal(self.peek()) && octal(self.chars.get(self.at + 1).copied()) {
                    let v = self.octal(c.to_digit(8).unwrap_or(0), 2);
                    if v > 0o377 {
                        return Err(refused("octal escape value outside of range 0-0o377"));
                    }
                    return atom(written(v));
                }
                Err(unsupported("a backreference"))
            }
            _ => {
                let v = self.char_escape(c)?;
                atom(written(v))
            }
        }
    }

    /// Up to `more` further octal digits after a first of value `v`.
    fn octal(&mut self, mut v: u32, more: usize) -> u32 {
        for _ in 0..more {
            match self.peek().and_then(|c| c.to_digit(8)) {
                Some(d) => {
                    self.at += 1;
                    v = v * 8 + d;
                }
                None => break,
            }
        }
        v
    }

    /// An escape of one character, the same inside and outside a class: `\n`, `\x41`,
    /// `\u0041`, `\U00000041`, a punctuation mark; `Err` for a letter Python refuses.
    fn char_escape(&mut self, c: char) -> Result<u32, String> {
        let hex = |p: &mut Parser, n: usize| -> Result<u32, String> {
            let mut v: u32 = 0;
            for _ in 0..n {
                let Some(d) = p.peek().and_then(|c| c.to_digit(16)) else {
                    return Err(refused(&format!("incomplete escape \\{c}")));
                };
                p.at += 1;
                v = v.saturating_mul(16).saturating_add(d);
            }
            Ok(v)
        };
        Ok(match c {
            'a' => 7,
            'f' => 12,
            'n' => 10,
            'r' => 13,
            't' => 9,
            'v' => 11,
            'x' => hex(self, 2)?,
            'u' => hex(self, 4)?,
            'U' => {
                let v = hex(self, 8)?;
                if v > 0x10_FFFF {
                    return Err(refused(&format!("bad escape \\U{v:08x}")));
                }
                v
            }
            'N' => return Err(unsupported("a character named by `\\N{...}`")),
            c if c.is_ascii_alphanumeric() => return Err(refused(&format!("bad escape \\{c}"))),
            c => u32::from(c),
        })
    }

    /// After a `[`: the class, as the engine writes it.
    fn class(&mut self, flags: Flags) -> Result<String, String> {
        let negated = self.eat('^');
        let mut items: Vec<Item> = Vec::new();
        let mut first = true;
        loop {
            let Some(c) = self.next() else { return Err(refused("unterminated character set")) };
            if c == ']' && !first {
                break;
            }
            first = false;
            let one = self.class_item(c, flags)?;
            if self.peek() == Some('-') {
                self.at += 1;
                let Some(d) = self.next() else { return Err(refused("unterminated character set")) };
                if d == ']' {
                    items.push(one);
                    items.push(Item::Range(u32::from('-'), u32::from('-')));
                    break;
                }
                let other = self.class_item(d, flags)?;
                match (one, other) {
                    (Item::Range(lo, _), Item::Range(hi, _)) if lo <= hi => items.push(Item::Range(lo, hi)),
                    _ => return Err(refused("bad character range")),
                }
            } else {
                items.push(one);
            }
        }
        let mut body = String::new();
        for item in &items {
            match *item {
                Item::Class(ref s) => body.push_str(s),
                Item::Range(lo, hi) => {
                    // Surrogates are in no text: the range without them.
                    let lo = if (0xD800..=0xDFFF).contains(&lo) { 0xE000 } else { lo };
                    let hi = if (0xD800..=0xDFFF).contains(&hi) { 0xD7FF } else { hi };
                    if lo > hi {
                        continue;
                    }
                    body.push_str(&format!("\\x{{{lo:X}}}"));
                    if hi > lo {
                        body.push_str(&format!("-\\x{{{hi:X}}}"));
                    }
                }
            }
        }
        Ok(match (body.is_empty(), negated) {
            (true, false) => NOTHING.to_string(),
            (true, true) => "(?s:.)".to_string(),
            (false, false) => format!("[{body}]"),
            (false, true) => format!("[^{body}]"),
        })
    }

    /// One item of a class that starts with `c`: a character (as a range of one) or a
    /// class escape.
    fn class_item(&mut self, c: char, flags: Flags) -> Result<Item, String> {
        if c != '\\' {
            return Ok(Item::Range(u32::from(c), u32::from(c)));
        }
        let Some(e) = self.next() else { return Err(refused("unterminated character set")) };
        let v = match e {
            'd' | 'D' | 'w' | 'W' | 's' | 'S' => return Ok(Item::Class(category(e, flags, true))),
            'b' => 8,
            '0'..='7' => {
                let v = self.octal(e.to_digit(8).unwrap_or(0), 2);
                if v > 0o377 {
                    return Err(refused("octal escape value outside of range 0-0o377"));
                }
                v
            }
            _ => self.char_escape(e)?,
        };
        Ok(Item::Range(v, v))
    }

    /// After a `(`: a group, or `None` for a comment or the global flags of the start
    /// (`start`: nothing before them at the top level but other such flags).
    fn group(&mut self, flags: &mut Flags, depth: usize, start: bool) -> Result<Option<Node>, String> {
        let mut inner = *flags;
        let mut case = None;
        if self.eat('?') {
            let Some(c) = self.next() else { return Err(refused("unexpected end of pattern")) };
            match c {
                ':' => {}
                'P' => match self.next() {
                    Some('<') => self.group_name()?,
                    Some('=') => return Err(unsupported("a backreference")),
                    _ => return Err(refused("unknown extension ?P")),
                },
                '=' | '!' => return Err(unsupported("look-ahead")),
                '<' => {
                    return Err(match self.peek() {
                        Some('=' | '!') => unsupported("look-behind"),
                        _ => refused("unknown extension ?<"),
                    });
                }
                '#' => {
                    while let Some(c) = self.next() {
                        if c == ')' {
                            return Ok(None);
                        }
                    }
                    return Err(refused("missing ), unterminated comment"));
                }
                '(' => return Err(unsupported("a conditional group")),
                '>' => return Err(unsupported("an atomic group")),
                c if "aiLmsux-".contains(c) => {
                    self.at -= 1;
                    let (on, off, scoped) = self.flags()?;
                    for (set, value) in [(on, true), (off, false)] {
                        for f in set.chars() {
                            match f {
                                'i' => inner.case = value,
                                'm' => inner.multiline = value,
                                's' => inner.dotall = value,
                                'x' => inner.verbose = value,
                                'a' => inner.ascii = true,
                                _ => {}
                            }
                        }
                    }
                    if inner.ascii && inner.case {
                        return Err(unsupported("ASCII-only case folding (flags `a` and `i` together)"));
                    }
                    if !scoped {
                        if depth > 0 || !start {
                            return Err(refused("global flags not at the start of the expression"));
                        }
                        *flags = inner;
                        return Ok(None);
                    }
                    if inner.case != flags.case {
                        case = Some(inner.case);
                    }
                }
                _ => return Err(refused(&format!("unknown extension ?{c}"))),
            }
        }
        let node = self.alternation(&mut inner, depth + 1)?;
        if !self.eat(')') {
            return Err(refused("missing ), unterminated subpattern"));
        }
        Ok(Some(Node::Group(case, Box::new(node))))
    }

    /// A group's name after `(?P<`, up to `>`: Python takes an identifier.
    fn group_name(&mut self) -> Result<(), String> {
        let mut name = String::new();
        loop {
            match self.next() {
                None => return Err(refused("missing >, unterminated name")),
                Some('>') => break,
                Some(c) => name.push(c),
            }
        }
        let mut chars = name.chars();
        let identifier = chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
            && chars.all(|c| c == '_' || c.is_alphanumeric());
        if identifier { Ok(()) } else { Err(refused(&format!("bad character in group name {name:?}"))) }
    }

    /// Inline flags `aiLmsux-imsx` up to `:` (scoped: true) or `)`: (on, off, scoped).
    fn flags(&mut self) -> Result<(String, String, bool), String> {
        let mut on = String::new();
        while let Some(c) = self.peek().filter(|c| "aiLmsux".contains(*c)) {
            self.at += 1;
            on.push(c);
        }
        let mut off = String::new();
        if self.eat('-') {
            while let Some(c) = self.peek().filter(|c| "aiLmsux".contains(*c)) {
                self.at += 1;
                off.push(c);
            }
            if off.is_empty() {
                return Err(refused("missing flag"));
            }
            if off.contains(['a', 'L', 'u']) {
                return Err(refused("bad inline flags: cannot turn off flags 'a', 'u' and 'L'"));
            }
        }
        if on.contains('L') {
            return Err(refused("bad inline flags: cannot use 'L' flag with a str pattern"));
        }
        if on.contains('a') && on.contains('u') {
            return Err(refused("bad inline flags: flags 'a', 'u' and 'L' are incompatible"));
        }
        if off.chars().any(|c| on.contains(c)) {
            return Err(refused("bad inline flags: flag turned on and off"));
        }
        match self.next() {
            Some(':') => Ok((on, off, true)),
            Some(')') if off.is_empty() => Ok((on, off, false)),
            Some(')') => Err(refused("missing :")),
            _ => Err(refused("missing -, : or )")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(pattern: &str, text: &str) -> Result<bool, String> {
        Patterns::default().search(pattern, text)
    }

    #[test]
    fn python_syntax_reads_as_python_reads_it() {
        let cases: &[(&str, &str, bool)] = &[
            (r"^[a-z]+$", "abc", true),
            (r"^[a-z]+$", "abc\n", true),
            (r"^[a-z]+$", "abc\n\n", false),
            (r"^[a-z]+\Z", "abc\n", false),
            (r"(?m)^b$", "a\nb\nc", true),
            (r"^b", "a\nb", false),
            (r"a.b", "a\nb", false),
            (r"(?s)a.b", "a\nb", true),
            (r"a{", "a{", true),
            (r"a{1,2", "a{1,2", true),
            (r"a{,2}b", "b", true),
            (r"^a{,}$", "aaaa", true),
            (r"x{}", "x{}", true),
            (r"[&&]", "&", true),
            (r"[--a]", "-", true),
            (r"[--a]", "b", false),
            (r"[[a]", "[", true),
            (r"[]a]", "]", true),
            (r"[^]a]", "]", false),
            (r"[a-]", "-", true),
            (r"\<", "<", true),
            (r"[[:alpha:]]", ":]", true),
            (r"[[:alpha:]]", "x", false),
            (r"\x41\u0042\U00000043\101", "ABCA", true),
            (r"[\x41-\x43]+$", "ABC", true),
            (r"\s", "\u{1c}", true),
            (r"\S", "\u{1c}", false),
            (r"(?a)\d", "\u{661}", false),
            (r"\d", "\u{661}", true),
            (r"(?x) a b  # comment\n c", "abc", true),
            (r"(?x)[ ]", " ", true),
            (r"(?i)abc", "ABC", true),
            (r"a(?i:b)c", "aBc", true),
            (r"a(?i:b)c", "aBC", false),
            (r"(?i)a(?-i:b)", "Ab", true),
            (r"(?i)a(?-i:b)", "AB", false),
            (r"(?P<n>ab)+", "abab", true),
            (r"a(?#comment)b", "ab", true),
            (r"\0", "\0", true),
            (r"[\b]", "\u{8}", true),
            (r"a|b$", "b\n", true),
            (r"(a|b$)", "b\n", true),
            (r"(b$)?", "", true),
            (r"\B", "", false),
            (r"\B", "-", true),
            (r"\b", "", false),
        ];
        for &(pattern, text, want) in cases {
            assert_eq!(search(pattern, text), Ok(want), "{pattern:?} on {text:?}: {:?}", translate(pattern));
        }
    }

    #[test]
    fn what_cannot_be_matched_as_python_matches_says_why() {
        let cases: &[(&str, &str)] = &[
            ("(?=a)b", "look-ahead"),
            ("(?<!a)b", "look-behind"),
            (r"(a)\1", "backreference"),
            ("(?P<x>a)(?P=x)", "backreference"),
            ("(?(1)a|b)", "conditional"),
            ("(?>a)", "atomic"),
            ("a*+", "possessive"),
            (r"\N{DIGIT ONE}", r"\N{...}"),
            ("a$b", "`$` with more"),
            ("(?ai)k", "ASCII-only case folding"),
            ("[", "unterminated character set"),
            ("*a", "nothing to repeat"),
            ("a**", "multiple repeat"),
            ("^*", "nothing to repeat"),
            (r"\p{L}", r"bad escape \p"),
            ("a{3,1}", "min repeat greater"),
            ("(a", "missing )"),
            ("a)", "unbalanced"),
            ("a(?i)", "global flags not at the start"),
            (r"[z-a]", "bad character range"),
            (r"\x4", "incomplete escape"),
            ("(?L)a", "'L' flag"),
        ];
        for &(pattern, want) in cases {
            let why = search(pattern, "ab").unwrap_err();
            assert!(why.contains(want), "{pattern:?}: {why}");
        }
    }

    #[test]
    fn compiling_takes_a_shared_budget() {
        let mut p = Patterns::default();
        // A pattern too large alone.
        let why = p.search(r"^\w{2000}$", "x").unwrap_err();
        assert!(why.contains("more than the 4 MiB"), "{why}");
        // Large patterns compile until the budget is taken, then none does.
        let mut compiled = 0;
        let mut refused = 0;
        for i in 0..100 {
            match p.search(&format!(r"^\w{{200}}N{i}$"), "abc") {
                Ok(false) => compiled += 1,
                Err(why) => {
                    assert!(why.contains("32 MiB"), "{why}");
                    refused += 1;
                }
                Ok(true) => panic!("matched"),
            }
        }
        assert!(compiled > 0 && refused > 90 && p.spent() <= TOTAL_BYTES + PATTERN_BYTES, "{compiled} {refused}");
        // A small pattern fits no more either, but one already compiled is kept.
        assert!(p.search("^a$", "a").is_err());
        assert_eq!(p.search(r"^\w{200}N0$", &"x".repeat(200)), Ok(false));
    }

    #[test]
    fn searches_take_a_bounded_number_of_steps() {
        let mut p = Patterns::default();
        // Some 60 000 states: a short text is searched, a megabyte would take too long.
        assert_eq!(p.search(r"\w{200}N", "abc"), Ok(false));
        let why = p.search(r"\w{200}N", &"a".repeat(1 << 20)).unwrap_err();
        assert!(why.contains("search steps"), "{why}");
        assert_eq!(p.search("b", "abc"), Ok(true));
    }
}
