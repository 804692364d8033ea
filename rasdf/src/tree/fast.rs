//! A fast scanner for the YAML that ASDF writers emit (PyYAML's block style: block
//! mappings and sequences, flow collections, plain and quoted one-line scalars, tags,
//! anchors and aliases). It produces the same events as libyaml, and gives up (returns
//! `Ok(false)`) on anything else — block scalars, multi-line quoted scalars, comments
//! after values, tabs, complex keys... — so the caller reparses the text with libyaml.
//! It never decides that a text is invalid: errors come only from the event sink.

use std::borrow::Cow;
use std::collections::HashMap;

use super::build::Ev;

/// Feeds `sink` the events of `text`; `Ok(true)` when the whole text was scanned,
/// `Ok(false)` when it gave up (the sink then has partial events to throw away).
///
/// # Errors
/// Whatever `sink` returns.
pub(crate) fn scan<'t, E>(
    text: &'t str,
    sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>,
) -> Result<bool, E> {
    if !plain_text(text) {
        return Ok(false);
    }
    let mut s = Scanner::new(text);
    finish(s.document(sink))
}

/// Line starts where `text` may be cut into about `parts` pieces of equal size for
/// [`scan_part`]: each holds, at column 0, what can only begin a key of a root block
/// mapping (a letter, a digit, `_` or a quote). Fewer (none) when the text has no such
/// lines where they are wanted. Whether a cut really falls between two entries of the
/// root mapping is settled by the scan of the part before it: when it does not, that
/// part is cut inside a construct and the scanner gives up on it.
pub(crate) fn split_points(text: &str, parts: usize) -> Vec<usize> {
    let b = text.as_bytes();
    let mut cuts = Vec::new();
    for k in 1..parts {
        let from = (b.len() / parts * k).max(cuts.last().map_or(0, |&c| c + 1));
        let key_start = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'\'' | b'"');
        let mut line_starts = memchr::memchr_iter(b'\n', b.get(from..).unwrap_or_default()).map(|nl| from + nl + 1);
        match line_starts.find(|&at| b.get(at).is_some_and(key_start)) {
            Some(at) => cuts.push(at),
            None => break,
        }
    }
    cuts
}

/// Scans one part of a text cut at [`split_points`]: `text[..end]` when `start` is 0,
/// whose root must then be a block mapping at column 0 (the scanner gives up on any
/// other root); otherwise the entries of that root mapping from `start` (the beginning
/// of a line) to `end`, as the events of a document whose root is an untagged mapping
/// holding just them. Positions are those in the whole text.
pub(crate) fn scan_part<'t, E>(
    text: &'t str,
    start: usize,
    end: usize,
    sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>,
) -> Result<bool, E> {
    let (Some(head), Some(part)) = (text.get(..end), text.get(start..end)) else { return Ok(false) };
    if !plain_text(part) {
        return Ok(false);
    }
    let mut s = Scanner::new(head);
    s.root_map_only = true;
    s.more_follows = end < text.len();
    if start == 0 {
        return finish(s.document(sink));
    }
    let mut entries = |s: &mut Scanner<'t>| {
        // The directives give the tag handles; the document's start is the first part's.
        s.directives()?;
        s.i = start;
        s.line = 1 + memchr::memchr_iter(b'\n', &s.b[..start]).count();
        s.line_start = start;
        s.emit(sink, Ev::DocStart)?;
        s.nest(|s| s.block_map(0, Props::default(), sink))?;
        s.document_end(sink)
    };
    finish(entries(&mut s))
}

fn finish<E>(r: R<bool, E>) -> Result<bool, E> {
    match r {
        Ok(done) => Ok(done),
        Err(Stop::GiveUp) => Ok(false),
        Err(Stop::Sink(e)) => Err(e),
    }
}

enum Stop<E> {
    GiveUp,
    Sink(E),
}

type R<T, E> = Result<T, Stop<E>>;

struct Scanner<'t> {
    b: &'t [u8],
    text: &'t str,
    i: usize,
    line: usize,
    line_start: usize,
    handles: HashMap<String, String>,
    /// Collections open; deeper nesting than [`MAX_DEPTH`] is left to libyaml, which
    /// does not recurse.
    depth: usize,
    /// Give up unless the root is a block mapping at column 0 (see [`scan_part`]).
    root_map_only: bool,
    /// The text goes on past `b` (a part of it): the document must not end inside.
    more_follows: bool,
    /// The start and the end of the line whose end was last looked for.
    eol: std::cell::Cell<(usize, usize)>,
}

/// The deepest nesting the (recursive) fast scanner follows.
const MAX_DEPTH: usize = 128;

/// Node properties: anchor and tag.
#[derive(Default)]
struct Props {
    anchor: Option<String>,
    tag: Option<String>,
}

fn give_up<T, E>() -> R<T, E> {
    Err(Stop::GiveUp)
}

impl<'t> Scanner<'t> {
    fn new(text: &'t str) -> Self {
        Scanner {
            b: text.as_bytes(),
            text,
            i: 0,
            line: 1,
            line_start: 0,
            handles: HashMap::new(),
            depth: 0,
            root_map_only: false,
            more_follows: false,
            eol: std::cell::Cell::new((usize::MAX, 0)),
        }
    }

    fn pos(&self) -> (usize, usize) {
        (self.line, self.i - self.line_start + 1)
    }

    #[inline]
    fn emit<E>(&self, sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>, ev: Ev<'t>) -> R<bool, E> {
        sink(ev, self.pos()).map_err(Stop::Sink)
    }

    fn peek(&self) -> u8 {
        self.b.get(self.i).copied().unwrap_or(0)
    }

    fn at(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }

    /// Whether a block sequence entry (`-` then a blank or the end) starts `k` bytes on.
    fn dash_at(&self, k: usize) -> bool {
        self.at(k) == b'-' && matches!(self.at(k + 1), b' ' | b'\n' | b'\r' | 0)
    }

    fn eof(&self) -> bool {
        self.i >= self.b.len()
    }

    /// Moves past a line break (`\n` or `\r\n`).
    fn newline<E>(&mut self) -> R<(), E> {
        match self.peek() {
            b'\r' if self.at(1) == b'\n' => self.i += 2,
            b'\n' => self.i += 1,
            0 if self.eof() => return Ok(()),
            _ => return give_up(),
        }
        self.line += 1;
        self.line_start = self.i;
        Ok(())
    }

    /// Skips the lines that hold only spaces, from the start of a line; returns how many
    /// there were and the indentation of the line after them, leaving `i` at its start.
    /// Gives up on a tab in the indentation.
    fn skip_blank_lines<E>(&mut self) -> R<(usize, usize), E> {
        let mut lines = 0;
        loop {
            let mut k = 0;
            while self.at(k) == b' ' {
                k += 1;
            }
            match self.at(k) {
                b'\t' => return give_up(),
                b'\n' | b'\r' => {
                    self.i += k;
                    self.newline()?;
                    lines += 1;
                }
                _ => return Ok((lines, k)),
            }
        }
    }

    fn at_eol(&self) -> bool {
        self.eof() || matches!(self.peek(), b'\n' | b'\r')
    }

    fn skip_spaces(&mut self) {
        while self.peek() == b' ' {
            self.i += 1;
        }
    }

    /// Skips spaces to the end of the line, then the line break.
    fn end_line<E>(&mut self) -> R<(), E> {
        self.skip_spaces();
        if !self.at_eol() {
            return give_up();
        }
        self.newline()
    }

    /// Skips blank and comment-only lines; returns the indentation of the next content
    /// line (None at the end of the text), leaving `i` at the line's start.
    fn next_content_line<E>(&mut self) -> R<Option<usize>, E> {
        loop {
            if self.eof() {
                return Ok(None);
            }
            let (_, k) = self.skip_blank_lines()?;
            match self.at(k) {
                0 if self.i + k >= self.b.len() => {
                    self.i += k;
                    return Ok(None);
                }
                b'#' => {
                    while !self.at_eol() {
                        self.i += 1;
                    }
                    self.newline()?;
                }
                _ => {
                    // A document marker: `---` starts another document and `... x` ends
                    // this one with more after it; libyaml decides what follows.
                    if k == 0
                        && (self.marker_at(b"---") || (self.marker_at(b"...") && matches!(self.at(3), b' ' | b'\t')))
                    {
                        return give_up();
                    }
                    return Ok(Some(k));
                }
            }
        }
    }

    fn document<E>(&mut self, sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>) -> R<bool, E> {
        self.directives()?;
        if !(self.b[self.i..].starts_with(b"---") && matches!(self.at(3), b' ' | b'\n' | b'\r' | 0)) {
            return give_up();
        }
        self.emit(sink, Ev::DocStart)?;
        self.i += 3;
        self.skip_spaces();
        let props = self.props()?;
        if self.at_eol() {
            self.newline()?;
            match self.next_content_line()? {
                Some(0) => {
                    if self.b[self.i..].starts_with(b"...") || (self.root_map_only && self.dash_at(0)) {
                        return give_up();
                    }
                    self.block_node(0, props, sink)?;
                }
                _ => return give_up(),
            }
        } else {
            if self.root_map_only {
                return give_up();
            }
            // An inline root (`--- {a: 1}`).
            self.inline_value(props, None, sink)?;
            self.end_line()?;
        }
        self.document_end(sink)
    }

    /// After the root: the end of the text or `...`.
    fn document_end<E>(&mut self, sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>) -> R<bool, E> {
        match self.next_content_line()? {
            // (A part of the text with more after it must not end the document.)
            // Only blank lines may follow `...`: more (another document, say) is
            // libyaml's to judge.
            Some(0)
                if self.b[self.i..].starts_with(b"...")
                    && matches!(self.at(3), b'\n' | b'\r' | 0)
                    && self.b[self.i + 3..].iter().all(|c| matches!(c, b'\n' | b'\r' | b' '))
                    && !self.more_follows => {}
            None => {}
            _ => return give_up(),
        }
        self.emit(sink, Ev::DocEnd)?;
        self.emit(sink, Ev::End)?;
        Ok(true)
    }

    /// The directives before the document (each at most once, as libyaml requires).
    fn directives<E>(&mut self) -> R<(), E> {
        let mut version_seen = false;
        loop {
            if self.peek() != b'%' {
                break;
            }
            let end = self.line_end();
            let line = &self.text[self.i..end];
            let parts: Vec<&str> = line.split(' ').filter(|p| !p.is_empty()).collect();
            match parts.as_slice() {
                ["%YAML", "1.1" | "1.2"] if !version_seen => version_seen = true,
                ["%TAG", handle, prefix]
                    if tag_handle(handle)
                        && !prefix.is_empty()
                        && prefix
                            .bytes()
                            .all(|c| c.is_ascii_alphanumeric() || b"-_;/?:@&=+$,.!~*'()[]".contains(&c))
                        && !self.handles.contains_key(*handle) =>
                {
                    self.handles.insert((*handle).to_string(), (*prefix).to_string());
                }
                _ => return give_up(),
            }
            self.i = end;
            self.newline()?;
        }
        Ok(())
    }

    /// Where the current line ends (its line break, or the end of the text).
    fn line_end(&self) -> usize {
        // Remembered per line: flow mappings ask at every key. (The first break at or
        // after the position is the line's end from anywhere on the line.)
        let (line_start, end) = self.eol.get();
        if line_start == self.line_start && end >= self.i {
            return end;
        }
        let end =
            memchr::memchr2(b'\n', b'\r', &self.b[self.i.min(self.b.len())..]).map_or(self.b.len(), |k| self.i + k);
        self.eol.set((self.line_start, end));
        end
    }

    /// Whether the current line runs more than `n` bytes past the position.
    fn line_longer_than(&self, n: usize) -> bool {
        self.line_end().saturating_sub(self.i) > n
    }

    /// Tag and anchor, in either order, each followed by spaces or the end of the line.
    #[inline]
    fn props<E>(&mut self) -> R<Props, E> {
        // Mostly none: those without a call.
        if !matches!(self.peek(), b'!' | b'&') {
            return Ok(Props::default());
        }
        self.props_slow()
    }

    fn props_slow<E>(&mut self) -> R<Props, E> {
        let mut p = Props::default();
        loop {
            match self.peek() {
                b'!' if p.tag.is_none() => p.tag = Some(self.tag()?),
                b'&' if p.anchor.is_none() => p.anchor = Some(self.anchor_name()?),
                _ => return Ok(p),
            }
            if !(self.peek() == b' ' || self.at_eol()) {
                return give_up();
            }
            self.skip_spaces();
        }
    }

    fn anchor_name<E>(&mut self) -> R<String, E> {
        self.i += 1;
        let start = self.i;
        while self.peek().is_ascii_alphanumeric() || matches!(self.peek(), b'_' | b'-') {
            self.i += 1;
        }
        if self.i == start {
            return give_up();
        }
        Ok(self.text[start..self.i].to_string())
    }

    /// A tag: `!suffix`, `!!suffix`, `!name!suffix`, `!<verbatim>`, or `!` alone.
    fn tag<E>(&mut self) -> R<String, E> {
        self.i += 1;
        if self.peek() == b'<' {
            let start = self.i + 1;
            let mut k = start;
            while k < self.b.len() && self.b[k] != b'>' {
                // The URI characters libyaml takes in a verbatim tag; `%` escapes and
                // anything else are libyaml's to judge.
                let c = self.b[k];
                if !(c.is_ascii_alphanumeric() || b"-_;/?:@&=+$,.!~*'()[]".contains(&c)) {
                    return give_up();
                }
                k += 1;
            }
            if k >= self.b.len() || k == start {
                return give_up();
            }
            self.i = k + 1;
            return Ok(self.text[start..k].to_string());
        }
        let start = self.i;
        while self.peek().is_ascii_alphanumeric() || b"-_./:;=$?@&+~*'()".contains(&self.peek()) || self.peek() == b'!'
        {
            self.i += 1;
        }
        let body = &self.text[start..self.i];
        // A tag ending at a flow indicator is left to libyaml.
        if matches!(self.peek(), b',' | b'[' | b']' | b'{' | b'}' | b'%') {
            return give_up();
        }
        let (handle, suffix) = match body.find('!') {
            None => ("!", body),
            Some(0) => ("!!", &body[1..]),
            Some(k) => (&self.text[start - 1..start + k + 1], &body[k + 1..]),
        };
        if suffix.contains('!') {
            return give_up();
        }
        if handle == "!" && suffix.is_empty() {
            return Ok("!".into());
        }
        let prefix = match self.handles.get(handle) {
            Some(p) => p.clone(),
            None if handle == "!!" => "tag:yaml.org,2002:".into(),
            None if handle == "!" => "!".into(),
            None => return give_up(),
        };
        if suffix.is_empty() {
            return give_up();
        }
        Ok(format!("{prefix}{suffix}"))
    }

    /// A block node at indentation `indent` (a mapping or a sequence), its properties
    /// already read; `i` is at the start of its first line.
    fn block_node<E>(
        &mut self,
        indent: usize,
        props: Props,
        sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>,
    ) -> R<(), E> {
        self.i += indent;
        self.nest(|s| if s.dash_at(0) { s.block_seq(indent, props, sink) } else { s.block_map(indent, props, sink) })
    }

    /// Runs `f` one collection deeper, giving up past [`MAX_DEPTH`].
    fn nest<T, E>(&mut self, f: impl FnOnce(&mut Self) -> R<T, E>) -> R<T, E> {
        if self.depth >= MAX_DEPTH {
            return give_up();
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn block_seq<E>(
        &mut self,
        indent: usize,
        props: Props,
        sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>,
    ) -> R<(), E> {
        self.emit(sink, Ev::SeqStart { anchor: props.anchor, tag: props.tag })?;
        loop {
            // At the '-' of an item.
            if !self.dash_at(0) {
                return give_up();
            }
            self.i += 1;
            self.skip_spaces();
            let item_col = self.i - self.line_start;
            self.block_value(indent, item_col, false, sink)?;
            match self.next_content_line()? {
                Some(n) if n == indent && self.dash_at(n) => {
                    self.i += n;
                }
                Some(n) if n < indent || (n == indent && self.at(n) != b'-') => break,
                None => break,
                _ => return give_up(),
            }
        }
        self.emit(sink, Ev::SeqEnd)?;
        Ok(())
    }

    fn block_map<E>(
        &mut self,
        indent: usize,
        props: Props,
        sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>,
    ) -> R<(), E> {
        self.emit(sink, Ev::MapStart { anchor: props.anchor, tag: props.tag })?;
        loop {
            // At the key.
            self.key(sink)?;
            self.skip_spaces();
            let col = self.i - self.line_start;
            self.block_value(indent, col, true, sink)?;
            match self.next_content_line()? {
                Some(n) if n == indent => {
                    if self.b[self.i..].starts_with(b"...") || self.b[self.i + n..].starts_with(b"- ") {
                        if n == 0 && self.b[self.i..].starts_with(b"...") {
                            break;
                        }
                        return give_up();
                    }
                    self.i += n;
                }
                Some(n) if n < indent => break,
                None => break,
                _ => return give_up(),
            }
        }
        self.emit(sink, Ev::MapEnd)?;
        Ok(())
    }

    /// A mapping key (a one-line plain or quoted scalar, or an alias) and its `:`.
    fn key<E>(&mut self, sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>) -> R<(), E> {
        // libyaml allows simple keys of at most 1024 characters.
        if self.line_longer_than(1000) {
            return give_up();
        }
        match self.peek() {
            b'\'' | b'"' => {
                let v = self.quoted(false)?;
                self.emit(sink, Ev::Scalar { anchor: None, tag: None, value: Cow::Owned(v), plain: false })?;
            }
            b'*' => {
                // The alias is a key only when `:` follows on the line (`*a :`); the
                // builder takes no event before that is known.
                let name = self.anchor_name()?;
                if self.peek() != b' ' {
                    return give_up();
                }
                self.skip_spaces();
                if !(self.peek() == b':' && matches!(self.at(1), b' ' | b'\n' | b'\r' | 0)) {
                    return give_up();
                }
                self.emit(sink, Ev::Alias(name))?;
            }
            c if starts_plain(c, self.at(1)) => {
                let start = self.i;
                loop {
                    let c = self.peek();
                    if self.at_eol() {
                        return give_up();
                    }
                    if c == b':' && matches!(self.at(1), b' ' | b'\n' | b'\r' | 0) {
                        break;
                    }
                    if c == b'#' && self.i > start && self.b[self.i - 1] == b' ' {
                        return give_up();
                    }
                    if c == b'\t' {
                        return give_up();
                    }
                    self.i += 1;
                }
                let v = trim_spaces(&self.text[start..self.i]);
                self.emit(sink, Ev::Scalar { anchor: None, tag: None, value: Cow::Borrowed(v), plain: true })?;
            }
            _ => return give_up(),
        }
        if !(self.peek() == b':' && matches!(self.at(1), b' ' | b'\n' | b'\r' | 0)) {
            return give_up();
        }
        self.i += 1;
        Ok(())
    }

    /// The value after `key:` or `-`: inline on this line, or a block node below. `parent`
    /// is the indentation of the mapping or sequence, `col` the column reached.
    fn block_value<E>(
        &mut self,
        parent: usize,
        col: usize,
        in_map: bool,
        sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>,
    ) -> R<(), E> {
        let props = self.props()?;
        if matches!(self.peek(), b'|' | b'>') {
            let at = self.pos();
            let v = self.block_scalar(parent)?;
            let ev = Ev::Scalar { anchor: props.anchor, tag: props.tag, value: Cow::Owned(v), plain: false };
            sink(ev, at).map_err(Stop::Sink)?;
            // What follows is at most as indented as the collection: deeper, it is left
            // to libyaml.
            let save = (self.i, self.line, self.line_start);
            if self.next_content_line()?.is_some_and(|n| n > parent) {
                return give_up();
            }
            (self.i, self.line, self.line_start) = save;
            return Ok(());
        }
        if self.at_eol() {
            self.newline()?;
            let save = (self.i, self.line, self.line_start);
            match self.next_content_line()? {
                // A nested block: deeper, or (after a key) a sequence at the same column.
                Some(n) if n > parent || (in_map && n == parent && self.dash_at(n)) => {
                    if self.b[self.i + n..].starts_with(b"...") && n == 0 {
                        (self.i, self.line, self.line_start) = save;
                        return self.empty(props, sink);
                    }
                    return self.block_node(n, props, sink);
                }
                _ => {
                    (self.i, self.line, self.line_start) = save;
                    return self.empty(props, sink);
                }
            }
        }
        // `- - x` starts a sequence inside a sequence item (PyYAML's nested lists).
        if !in_map && self.dash_at(0) {
            if props.anchor.is_some() || props.tag.is_some() {
                return give_up();
            }
            return self.nest(|s| s.block_seq(col, props, sink));
        }
        // `- key: value` starts a mapping inside a sequence item.
        if !in_map && self.line_has_key() {
            if props.anchor.is_some() || props.tag.is_some() {
                return give_up();
            }
            return self.nest(|s| s.block_map(col, props, sink));
        }
        self.inline_value(props, Some(parent), sink)?;
        self.end_line()?;
        // Anything else on a deeper line is left to libyaml.
        let save = (self.i, self.line, self.line_start);
        if self.next_content_line()?.is_some_and(|n| n > parent) {
            return give_up();
        }
        (self.i, self.line, self.line_start) = save;
        Ok(())
    }

    fn empty<E>(&mut self, props: Props, sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>) -> R<(), E> {
        self.emit(sink, Ev::Scalar { anchor: props.anchor, tag: props.tag, value: Cow::Borrowed(""), plain: true })?;
        Ok(())
    }

    /// Whether the rest of the line is `key: ...` (a plain or quoted key and `: `).
    fn line_has_key(&self) -> bool {
        let end = self.line_end();
        let line = &self.b[self.i..end];
        match line.first() {
            Some(b'\'' | b'"' | b'[' | b'{' | b'!' | b'&' | b'*' | b'|' | b'>' | b'#') | None => {
                // Quoted keys in sequence items are rare; a flow value is not a key.
                matches!(line.first(), Some(b'\'' | b'"')) && {
                    // Past the closing quote (escapes and doubled quotes skipped).
                    let q = line[0];
                    let mut k = 1;
                    while k < line.len() {
                        match line[k] {
                            b'\\' if q == b'"' => k += 2,
                            c if c == q && q == b'\'' && line.get(k + 1) == Some(&q) => k += 2,
                            c if c == q => break,
                            _ => k += 1,
                        }
                    }
                    line.get(k + 1) == Some(&b':')
                }
            }
            _ => line.windows(2).any(|w| w == b": ") || line.ends_with(b":"),
        }
    }

    /// A value on the current line: an alias, a flow collection, a quoted or plain scalar.
    /// A plain scalar of a node in a block collection indented `parent` goes on over
    /// the lines indented deeper, folded as libyaml folds it.
    fn inline_value<E>(
        &mut self,
        props: Props,
        parent: Option<usize>,
        sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>,
    ) -> R<(), E> {
        match self.peek() {
            b'*' => {
                if props.anchor.is_some() || props.tag.is_some() {
                    return give_up();
                }
                let name = self.anchor_name()?;
                self.emit(sink, Ev::Alias(name))?;
            }
            b'[' | b'{' => self.nest(|s| s.flow(props, sink))?,
            b'\'' | b'"' => {
                let at = self.pos();
                let v = self.quoted(true)?;
                let ev = Ev::Scalar { anchor: props.anchor, tag: props.tag, value: Cow::Owned(v), plain: false };
                sink(ev, at).map_err(Stop::Sink)?;
            }
            b'|' | b'>' | b'%' | b'@' | b'`' | b'#' | b'?' | b',' | b']' | b'}' => return give_up(),
            _ => {
                // A plain scalar to the end of the line.
                let start = self.i;
                let end = self.line_end();
                let v = trim_spaces(&self.text[start..end]);
                let vb = v.as_bytes();
                if vb.windows(2).any(|w| w == b": " || w == b" #") || vb.ends_with(b":") || vb.contains(&b'\t') {
                    return give_up();
                }
                if !starts_plain(self.peek(), self.at(1)) {
                    return give_up();
                }
                let at = self.pos();
                self.i = start + v.len();
                let value = match parent {
                    Some(p) => self.plain_continued(v, p)?,
                    None => Cow::Borrowed(v),
                };
                let ev = Ev::Scalar { anchor: props.anchor, tag: props.tag, value, plain: true };
                sink(ev, at).map_err(Stop::Sink)?;
            }
        }
        Ok(())
    }

    /// Skips spaces and line breaks inside a flow collection.
    #[inline]
    fn flow_space<E>(&mut self) -> R<(), E> {
        // Mostly one space or none: those without a call.
        if self.peek() == b' ' {
            self.i += 1;
        }
        if !matches!(self.peek(), b' ' | b'\n' | b'\r' | b'\t' | b'#') && self.i != self.line_start {
            return Ok(());
        }
        self.flow_space_slow()
    }

    fn flow_space_slow<E>(&mut self) -> R<(), E> {
        loop {
            match self.peek() {
                b' ' => self.i += 1,
                b'\n' | b'\r' => self.newline()?,
                b'\t' | b'#' => return give_up(),
                // A document marker inside a flow collection is libyaml's to judge.
                _ if self.i == self.line_start && (self.marker_at(b"---") || self.marker_at(b"...")) => {
                    return give_up();
                }
                _ => return Ok(()),
            }
        }
    }

    /// Whether `marker` (`---` or `...`) stands at the position, followed by a blank, a
    /// line break or the end.
    fn marker_at(&self, marker: &[u8; 3]) -> bool {
        self.b[self.i.min(self.b.len())..].starts_with(marker) && matches!(self.at(3), b' ' | b'\t' | b'\n' | b'\r' | 0)
    }

    fn flow<E>(&mut self, props: Props, sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>) -> R<(), E> {
        let is_map = self.peek() == b'{';
        let close = if is_map { b'}' } else { b']' };
        self.emit(
            sink,
            if is_map {
                Ev::MapStart { anchor: props.anchor, tag: props.tag }
            } else {
                Ev::SeqStart { anchor: props.anchor, tag: props.tag }
            },
        )?;
        self.i += 1;
        self.flow_space()?;
        if self.peek() == close {
            self.i += 1;
            self.emit(sink, if is_map { Ev::MapEnd } else { Ev::SeqEnd })?;
            return Ok(());
        }
        loop {
            self.flow_node(is_map, sink)?;
            if is_map {
                // A simple key's ':' stands on the key's line (libyaml refuses it later).
                self.skip_spaces();
                if !(self.peek() == b':' && matches!(self.at(1), b' ' | b'\n' | b'\r')) {
                    return give_up();
                }
                self.i += 1;
                self.flow_space()?;
                if matches!(self.peek(), b',' | b'}') {
                    return give_up();
                }
                self.flow_node(false, sink)?;
            }
            self.flow_space()?;
            match self.peek() {
                b',' => {
                    self.i += 1;
                    self.flow_space()?;
                    if self.peek() == close {
                        return give_up();
                    }
                }
                c if c == close => {
                    self.i += 1;
                    break;
                }
                _ => return give_up(),
            }
        }
        self.emit(sink, if is_map { Ev::MapEnd } else { Ev::SeqEnd })?;
        Ok(())
    }

    /// One node inside a flow collection; `key` when it is a flow mapping's key.
    fn flow_node<E>(
        &mut self,
        key: bool,
        sink: &mut impl FnMut(Ev<'t>, (usize, usize)) -> Result<bool, E>,
    ) -> R<(), E> {
        if key && self.line_longer_than(1000) {
            // libyaml allows simple keys of at most 1024 characters.
            return give_up();
        }
        let props = self.props()?;
        if self.at_eol() {
            return give_up();
        }
        match self.peek() {
            b'*' => {
                if props.anchor.is_some() || props.tag.is_some() {
                    return give_up();
                }
                let name = self.anchor_name()?;
                self.emit(sink, Ev::Alias(name))?;
            }
            b'[' | b'{' => {
                if key {
                    return give_up();
                }
                self.nest(|s| s.flow(props, sink))?;
            }
            b'\'' | b'"' => {
                // A key is a simple key: libyaml refuses one over several lines.
                let at = self.pos();
                let v = self.quoted(!key)?;
                let ev = Ev::Scalar { anchor: props.anchor, tag: props.tag, value: Cow::Owned(v), plain: false };
                sink(ev, at).map_err(Stop::Sink)?;
            }
            // In a flow collection `:` and `?` are indicators even before a non-blank:
            // `?x` is a complex key `x` (libyaml).
            c if starts_plain(c, self.at(1)) && c != b':' && c != b'?' => {
                let line = self.line;
                let v = self.flow_plain()?;
                // A key is a simple key: libyaml refuses one folded over lines.
                if v.is_empty() || (key && self.line != line) {
                    return give_up();
                }
                self.emit(sink, Ev::Scalar { anchor: props.anchor, tag: props.tag, value: v, plain: true })?;
            }
            _ => return give_up(),
        }
        Ok(())
    }

    /// Where the run of bytes from `i` that need no thought in a flow plain scalar ends.
    #[inline]
    fn plain_run(&self, mut i: usize) -> usize {
        while i < self.b.len() && !FLOW_PLAIN_STOP[usize::from(self.b[i])] {
            i += 1;
        }
        i
    }

    /// A plain scalar in a flow collection; it may be folded over lines (one line break
    /// becomes a space).
    fn flow_plain<E>(&mut self) -> R<Cow<'t, str>, E> {
        // The usual case first: a run of ordinary bytes up to `,`, a bracket, or `: `.
        let start = self.i;
        let i = self.plain_run(start);
        let ended = match self.b.get(i) {
            Some(b',' | b'[' | b']' | b'{' | b'}') => true,
            Some(b':') => matches!(self.b.get(i + 1), Some(b' ' | b'\n' | b'\r')),
            _ => false,
        };
        if ended {
            self.i = i;
            return Ok(Cow::Borrowed(trim_spaces(&self.text[start..i])));
        }
        let mut out: Cow<'t, str> = Cow::Borrowed("");
        loop {
            let start = self.i;
            loop {
                self.i = self.plain_run(self.i);
                let c = self.peek();
                if self.at_eol() || matches!(c, b',' | b'[' | b']' | b'{' | b'}') {
                    break;
                }
                if c == b':' {
                    // libyaml: in flow context a ':' not followed by a blank ends the
                    // scalar or is an error; leave the latter to libyaml.
                    if matches!(self.at(1), b' ' | b'\n' | b'\r') {
                        break;
                    }
                    return give_up();
                }
                if c == b'#' && self.i > 0 && self.b[self.i - 1] == b' ' {
                    return give_up();
                }
                if c == b'\t' {
                    return give_up();
                }
                self.i += 1;
            }
            let piece = trim_spaces(&self.text[start..self.i]);
            if out.is_empty() {
                out = Cow::Borrowed(piece);
            } else {
                out.to_mut().push_str(piece);
            }
            if !self.at_eol() {
                return Ok(out);
            }
            // Folding: look at what follows the line break(s).
            let save = (self.i, self.line, self.line_start);
            let mut breaks = 0;
            loop {
                match self.peek() {
                    b'\n' | b'\r' => {
                        self.newline()?;
                        breaks += 1;
                    }
                    b' ' => self.i += 1,
                    b'\t' => return give_up(),
                    _ => break,
                }
            }
            let c = self.peek();
            if self.eof() || matches!(c, b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'-' | b'.') || c == b':' {
                // The scalar ended at the line break (or it is something to leave alone).
                if matches!(c, b'#' | b'-' | b'.') {
                    return give_up();
                }
                (self.i, self.line, self.line_start) = save;
                return Ok(out);
            }
            let out = out.to_mut();
            if breaks == 1 {
                out.push(' ');
            } else {
                for _ in 1..breaks {
                    out.push('\n');
                }
            }
        }
    }

    /// A quoted scalar; over several lines only when `multiline` (a key is a simple key,
    /// on one line), its lines folded as libyaml folds them: the blanks that end a line
    /// dropped, those that start the next skipped, one line break read as a space and
    /// each further one kept; in double quotes, `\` before a line break joins the lines.
    fn quoted<E>(&mut self, multiline: bool) -> R<String, E> {
        let q = self.peek();
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while !self.at_eol() && self.peek() != q && !(q == b'"' && self.peek() == b'\\') {
                self.i += 1;
            }
            if self.at_eol() {
                if !multiline || self.eof() {
                    return give_up();
                }
                out.push_str(self.text[start..self.i].trim_end_matches([' ', '\t']));
                self.newline()?;
                let breaks = self.quoted_breaks()?;
                match breaks {
                    0 => out.push(' '),
                    n => out.extend(std::iter::repeat_n('\n', n)),
                }
                continue;
            }
            out.push_str(&self.text[start..self.i]);
            let c = self.peek();
            if c == q {
                if q == b'\'' && self.at(1) == b'\'' {
                    out.push('\'');
                    self.i += 2;
                    continue;
                }
                self.i += 1;
                return Ok(out);
            }
            if multiline && matches!(self.at(1), b'\n' | b'\r') {
                // An escaped line break: the lines joined with nothing between; the
                // empty lines after it kept.
                self.i += 1;
                self.newline()?;
                let breaks = self.quoted_breaks()?;
                out.extend(std::iter::repeat_n('\n', breaks));
                continue;
            }
            // A backslash escape in a double-quoted scalar.
            self.i += 1;
            let e = self.peek();
            self.i += 1;
            let ch = match e {
                b'0' => '\0',
                b'a' => '\x07',
                b'b' => '\x08',
                b't' | b'\t' => '\t',
                b'n' => '\n',
                b'v' => '\x0b',
                b'f' => '\x0c',
                b'r' => '\r',
                b'e' => '\x1b',
                b' ' => ' ',
                b'"' => '"',
                b'/' => '/',
                b'\\' => '\\',
                b'N' => '\u{85}',
                b'_' => '\u{a0}',
                b'L' => '\u{2028}',
                b'P' => '\u{2029}',
                b'x' | b'u' | b'U' => {
                    let n = match e {
                        b'x' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let hex = self.text.get(self.i..self.i + n).ok_or(Stop::GiveUp)?;
                    let v = u32::from_str_radix(hex, 16).map_err(|_| Stop::GiveUp)?;
                    self.i += n;
                    char::from_u32(v).ok_or(Stop::GiveUp)?
                }
                _ => return give_up(),
            };
            out.push(ch);
        }
    }
}

impl<'t> Scanner<'t> {
    /// A block plain scalar whose first line is `first` (`i` at its end), with the
    /// lines after it indented deeper than `parent`, as libyaml reads them: each line's
    /// leading and trailing blanks dropped, one line break read as a space and each
    /// further one (empty lines) kept. Leaves `i` at the end of the scalar's last line.
    /// Gives up where libyaml would end the scalar inside a line (`: `, ` #`), at a
    /// comment line inside it, and on tabs.
    fn plain_continued<E>(&mut self, first: &'t str, parent: usize) -> R<Cow<'t, str>, E> {
        let mut value = Cow::Borrowed(first);
        loop {
            let end_of_line = (self.i, self.line, self.line_start);
            self.skip_spaces();
            if self.eof() || !self.at_eol() {
                break;
            }
            self.newline()?;
            let (breaks, col) = self.skip_blank_lines()?;
            if self.i + col >= self.b.len() || col <= parent {
                // The scalar ended on the line before.
                (self.i, self.line, self.line_start) = end_of_line;
                break;
            }
            self.i += col;
            let start = self.i;
            let line = trim_spaces(&self.text[start..self.line_end()]);
            let lb = line.as_bytes();
            if lb[0] == b'#'
                || lb.windows(2).any(|w| w == b": " || w == b" #")
                || lb.ends_with(b":")
                || lb.contains(&b'\t')
            {
                return give_up();
            }
            let v = value.to_mut();
            match breaks {
                0 => v.push(' '),
                n => v.extend(std::iter::repeat_n('\n', n)),
            }
            v.push_str(line);
            self.i = start + line.len();
        }
        Ok(value)
    }
}

impl Scanner<'_> {
    /// A block scalar (`|` literal or `>` folded, at `i`), the value of a node in a
    /// block collection indented `parent`, read as libyaml reads it: the header's
    /// chomping (`-`, `+`) and indentation indicators, the indentation found from the
    /// first lines when not given, folding, chomping. Leaves `i` at the start of the
    /// first line after it. Gives up on tabs in the indentation and on what libyaml
    /// refuses.
    fn block_scalar<E>(&mut self, parent: usize) -> R<String, E> {
        let literal = self.peek() == b'|';
        self.i += 1;
        let (mut chomp, mut increment) = (0i8, 0usize);
        for _ in 0..2 {
            match self.peek() {
                b'+' | b'-' if chomp == 0 => chomp = if self.peek() == b'+' { 1 } else { -1 },
                c @ b'1'..=b'9' if increment == 0 => increment = usize::from(c - b'0'),
                _ => break,
            }
            self.i += 1;
        }
        // Blanks and a comment to the end of the line.
        while matches!(self.peek(), b' ' | b'\t') {
            self.i += 1;
        }
        if self.peek() == b'#' {
            while !self.at_eol() {
                self.i += 1;
            }
        }
        if !self.at_eol() {
            return give_up();
        }
        self.newline()?;
        let mut indent = if increment > 0 { parent + increment } else { 0 };
        let (mut out, mut trailing) = (String::new(), 0usize);
        let (mut leading_break, mut leading_blank) = (false, false);
        self.block_breaks(parent, &mut indent, &mut trailing)?;
        while self.i - self.line_start == indent && !self.eof() {
            // At the start of a line with content.
            let trailing_blank = matches!(self.peek(), b' ' | b'\t');
            if !literal && leading_break && !leading_blank && !trailing_blank {
                // Folded: one line break is a space, more are kept but the first.
                if trailing == 0 {
                    out.push(' ');
                }
            } else if leading_break {
                out.push('\n');
            }
            out.extend(std::iter::repeat_n('\n', trailing));
            trailing = 0;
            leading_blank = trailing_blank;
            let start = self.i;
            while !self.at_eol() {
                self.i += 1;
            }
            out.push_str(&self.text[start..self.i]);
            if self.eof() {
                // A last line with no line break: libyaml-safer fails on it.
                return give_up();
            }
            self.newline()?;
            leading_break = true;
            self.block_breaks(parent, &mut indent, &mut trailing)?;
        }
        if chomp != -1 && leading_break {
            out.push('\n');
        }
        if chomp == 1 {
            out.extend(std::iter::repeat_n('\n', trailing));
        }
        // Back to the start of the line that ended the scalar, for the caller.
        self.i = self.line_start;
        Ok(out)
    }

    /// The indentation and empty lines of a block scalar before a line with content:
    /// spaces skipped up to `indent` (all of them while it is not known yet, then
    /// settled as libyaml settles it), line breaks counted into `breaks`.
    fn block_breaks<E>(&mut self, parent: usize, indent: &mut usize, breaks: &mut usize) -> R<(), E> {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || self.i - self.line_start < *indent) && self.peek() == b' ' {
                self.i += 1;
            }
            max_indent = max_indent.max(self.i - self.line_start);
            if (*indent == 0 || self.i - self.line_start < *indent) && self.peek() == b'\t' {
                return give_up();
            }
            if self.eof() || !self.at_eol() {
                break;
            }
            self.newline()?;
            *breaks += 1;
        }
        if *indent == 0 {
            *indent = max_indent.max(parent + 1);
        }
        Ok(())
    }

    /// After a line break inside a quoted scalar: skips the blanks that start lines and
    /// the empty lines; returns how many empty lines there were. Gives up where libyaml
    /// would fail (the text ends; a document marker at the start of a line).
    fn quoted_breaks<E>(&mut self) -> R<usize, E> {
        let mut breaks = 0;
        loop {
            let line = self.i;
            while matches!(self.peek(), b' ' | b'\t') {
                self.i += 1;
            }
            if self.eof() || (self.i == line && (self.marker_at(b"---") || self.marker_at(b"..."))) {
                return give_up();
            }
            if !self.at_eol() {
                return Ok(breaks);
            }
            self.newline()?;
            breaks += 1;
        }
    }
}

/// Whether the text has only characters libyaml's reader takes and no line breaks
/// other than LF and CR (YAML 1.1 also breaks lines at NEL, LS and PS).
/// Bytes a plain scalar in a flow collection stops at or must look at.
static FLOW_PLAIN_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let stops = [b',', b'[', b']', b'{', b'}', b':', b'#', b'\t', b'\n', b'\r'];
    let mut k = 0;
    while k < stops.len() {
        t[stops[k] as usize] = true;
        k += 1;
    }
    t
};

/// A tag handle as libyaml scans one in a `%TAG` directive: `!`, `!!`, or `!word!`
/// (a word of letters, digits, `-` and `_`; libyaml stops the handle at its second `!`).
fn tag_handle(handle: &str) -> bool {
    match handle.len() {
        1 | 2 => handle.bytes().all(|c| c == b'!'),
        n => {
            handle.starts_with('!')
                && handle.ends_with('!')
                && handle[1..n - 1].bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
        }
    }
}

fn plain_text(text: &str) -> bool {
    // Control bytes other than tab and line breaks, and DEL; whole chunks at a time, so
    // that the compiler can test many bytes at once.
    let bad = |b: u8| (b < 0x20 && b != b'\t' && b != b'\n' && b != b'\r') | (b == 0x7f);
    let ascii_ok = text.as_bytes().chunks(64).all(|c| !c.iter().fold(false, |any, &b| any | bad(b)));
    ascii_ok
        && (text.is_ascii()
            || text.chars().all(|c| {
                let u = c as u32;
                !(0x80..=0x9f).contains(&u) && !matches!(u, 0x2028 | 0x2029 | 0xfeff | 0xfffe | 0xffff)
            }))
}

/// `s` without the spaces that end it.
fn trim_spaces(s: &str) -> &str {
    let n = s.bytes().rev().take_while(|&b| b == b' ').count();
    &s[..s.len() - n]
}

/// Whether a plain scalar may start with `c` (followed by `next`).
fn starts_plain(c: u8, next: u8) -> bool {
    match c {
        0 | b' ' | b'\t' | b'\n' | b'\r' => false,
        b'-' | b'?' | b':' => !matches!(next, b' ' | b'\t' | b'\n' | b'\r' | 0),
        b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\'' | b'"' | b'%' | b'@'
        | b'`' => false,
        _ => true,
    }
}
