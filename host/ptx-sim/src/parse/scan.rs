//! The scanner: PTX text cut into statements, labels and scope braces, comments dropped.

use crate::ParseError;

/// A scanned piece of PTX.
#[derive(Debug)]
pub(super) enum Item {
    Open(usize),
    Close(usize),
    Label(String, usize),
    Stmt(String, usize),
}

pub(super) fn err(line: usize, text: &str, why: impl Into<String>) -> ParseError {
    ParseError {
        line,
        text: text.trim().to_string(),
        why: why.into(),
    }
}

/// Cuts PTX into statements, labels and braces, dropping comments.
pub(super) fn scan(src: &str) -> Result<Vec<Item>, ParseError> {
    let b = src.as_bytes();
    let mut items = Vec::new();
    let mut i = 0;
    let mut line = 1;
    // Skips a comment at `i` if there is one; returns whether it did.
    let skip_comment = |i: &mut usize, line: &mut usize| -> Result<bool, ParseError> {
        if b[*i] == b'/' && b.get(*i + 1) == Some(&b'/') {
            while *i < b.len() && b[*i] != b'\n' {
                *i += 1;
            }
            Ok(true)
        } else if b[*i] == b'/' && b.get(*i + 1) == Some(&b'*') {
            let start = *line;
            *i += 2;
            while *i < b.len() && !(b[*i] == b'*' && b.get(*i + 1) == Some(&b'/')) {
                if b[*i] == b'\n' {
                    *line += 1;
                }
                *i += 1;
            }
            if *i >= b.len() {
                return Err(err(start, "/*", "unterminated comment"));
            }
            *i += 2;
            Ok(true)
        } else {
            Ok(false)
        }
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if skip_comment(&mut i, &mut line)? {
            continue;
        }
        if c == b'{' {
            items.push(Item::Open(line));
            i += 1;
            continue;
        }
        if c == b'}' {
            items.push(Item::Close(line));
            i += 1;
            continue;
        }
        // A statement or a label.
        let start_line = line;
        let mut text = String::new();
        let mut braces = 0i32;
        let mut parens = 0i32;
        loop {
            if i >= b.len() {
                return Err(err(start_line, &text, "statement without `;`"));
            }
            if skip_comment(&mut i, &mut line)? {
                text.push(' ');
                continue;
            }
            let c = b[i];
            match c {
                b'\n' if is_line_directive(&text) => {
                    items.push(Item::Stmt(text.trim().to_string(), start_line));
                    break;
                }
                b'\n' => {
                    line += 1;
                    text.push(' ');
                }
                b';' if braces == 0 && parens == 0 => {
                    i += 1;
                    items.push(Item::Stmt(text.trim().to_string(), start_line));
                    break;
                }
                b':' if braces == 0
                    && parens == 0
                    && !text.trim().is_empty()
                    && !text.trim().contains(char::is_whitespace) =>
                {
                    i += 1;
                    items.push(Item::Label(text.trim().to_string(), start_line));
                    break;
                }
                b'{' if braces == 0
                    && parens == 0
                    && text
                        .split_whitespace()
                        .any(|w| w == ".entry" || w == ".func") =>
                {
                    // A function header ends where its body begins.
                    items.push(Item::Stmt(text.trim().to_string(), start_line));
                    break;
                }
                b'{' => {
                    braces += 1;
                    text.push('{');
                }
                b'}' => {
                    braces -= 1;
                    if braces < 0 {
                        return Err(err(start_line, &text, "unbalanced `}`"));
                    }
                    text.push('}');
                }
                b'(' => {
                    parens += 1;
                    text.push('(');
                }
                b')' => {
                    parens -= 1;
                    text.push(')');
                }
                _ => text.push(c as char),
            }
            i += 1;
        }
    }
    Ok(items)
}

/// Directives that end at the end of their line rather than at a `;`.
pub(super) fn is_line_directive(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    matches!(
        first,
        ".version" | ".target" | ".address_size" | ".file" | ".loc"
    )
}
