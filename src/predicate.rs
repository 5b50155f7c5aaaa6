//! A small SQL predicate language over columns and literals, shared by `optimize --where`
//! (partition pruning) and later by the skipping report.
//!
//! # Grammar
//! ```text
//! expr       := or
//! or         := and ( OR and )*
//! and        := not ( AND not )*
//! not        := NOT not | '(' expr ')' | comparison
//! comparison := column op literal
//!             | column [NOT] IN '(' literal ( ',' literal )* ')'
//!             | column IS [NOT] NULL
//!             | column [NOT] BETWEEN literal AND literal
//! op         := '=' | '==' | '!=' | '<>' | '<' | '<=' | '>' | '>='
//! column     := identifier ( '.' identifier )* | `back-quoted` | "double-quoted"
//! literal    := number | 'string' (with '' for a quote) | TRUE | FALSE | NULL
//!             | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]'
//! ```
//! Keywords are case-insensitive. Evaluation uses SQL three-valued logic: a comparison with
//! a null value is unknown, and only rows (here: partitions) where the predicate is *true*
//! are selected.

use std::cmp::Ordering;
use std::fmt;

use deltalake::kernel::DataType;

use crate::error::{Error, Result};
use crate::value::{Typed, parse_typed};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `=`
    Eq,
    /// `!=` or `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CompareOp {
    fn holds(self, ordering: Ordering) -> bool {
        match self {
            Self::Eq => ordering == Ordering::Equal,
            Self::NotEq => ordering != Ordering::Equal,
            Self::Lt => ordering == Ordering::Less,
            Self::LtEq => ordering != Ordering::Greater,
            Self::Gt => ordering == Ordering::Greater,
            Self::GtEq => ordering != Ordering::Less,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Self::Eq => "=",
            Self::NotEq => "!=",
            Self::Lt => "<",
            Self::LtEq => "<=",
            Self::Gt => ">",
            Self::GtEq => ">=",
        }
    }
}

/// A literal as written: its type is decided by the column it is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `NULL`
    Null,
    /// `TRUE` / `FALSE`
    Bool(bool),
    /// A number, kept as text so integers and decimals lose nothing.
    Number(String),
    /// A quoted string, or the text of `DATE '...'` / `TIMESTAMP '...'`.
    String(String),
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("NULL"),
            Self::Bool(b) => write!(f, "{}", if *b { "TRUE" } else { "FALSE" }),
            Self::Number(n) => f.write_str(n),
            Self::String(s) => write!(f, "'{}'", s.replace('\'', "''")),
        }
    }
}

/// Looks up a column's Delta type and value (the log's string, `None` for null).
pub type ValueOf<'a> = dyn Fn(&[String]) -> Result<(&'a DataType, Option<&'a str>)> + 'a;

/// A parsed predicate (the abstract syntax tree).
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `a AND b`
    And(Box<Predicate>, Box<Predicate>),
    /// `a OR b`
    Or(Box<Predicate>, Box<Predicate>),
    /// `NOT a`
    Not(Box<Predicate>),
    /// `column op literal`
    Compare {
        /// Column path, e.g. `["a", "b"]` for `a.b`.
        column: Vec<String>,
        /// The operator.
        op: CompareOp,
        /// The literal.
        value: Literal,
    },
    /// `column [NOT] IN (literals)`
    In {
        /// Column path.
        column: Vec<String>,
        /// The list.
        values: Vec<Literal>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `column IS [NOT] NULL`
    IsNull {
        /// Column path.
        column: Vec<String>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `column [NOT] BETWEEN low AND high` (inclusive)
    Between {
        /// Column path.
        column: Vec<String>,
        /// Lower bound, inclusive.
        low: Literal,
        /// Upper bound, inclusive.
        high: Literal,
        /// `NOT BETWEEN`.
        negated: bool,
    },
}

impl Predicate {
    /// Parses `text` with the grammar in the module docs.
    ///
    /// # Errors
    /// [`Error::InvalidPredicate`] with the position of the first problem.
    ///
    /// # Examples
    /// ```
    /// use delta_layout::predicate::Predicate;
    /// let p = Predicate::parse("date >= '2024-01-01' AND region IN ('eu', 'us')")?;
    /// assert_eq!(p.columns(), vec![vec!["date".to_string()], vec!["region".to_string()]]);
    /// # Ok::<(), delta_layout::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            text,
            tokens,
            pos: 0,
            depth: 0,
            terms: 0,
        };
        let predicate = parser.or()?;
        if parser.pos < parser.tokens.len() {
            let unexpected = &parser.tokens[parser.pos];
            // `2023-04-13` unquoted reads as the numbers 2023, -04 and -13.
            let hint = match (
                parser.pos.checked_sub(1).map(|p| &parser.tokens[p]),
                &unexpected.1,
            ) {
                (Some((start, Token::Number(_))), Token::Number(n)) if n.starts_with('-') => {
                    let end = parser.tokens[parser.pos..]
                        .iter()
                        .take_while(|t| matches!(&t.1, Token::Number(n) if n.starts_with('-')))
                        .last()
                        .map_or(unexpected.0, |t| t.0 + t.1.to_string().len());
                    let date = text.get(*start..end).unwrap_or_default();
                    format!(" (a date or timestamp is written quoted: '{date}')")
                }
                _ => String::new(),
            };
            return Err(parser.error(&format!("unexpected '{}'{hint}", unexpected.1)));
        }
        Ok(predicate)
    }

    /// Every column path the predicate mentions, in order of appearance, without duplicates.
    #[must_use]
    pub fn columns(&self) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = Vec::new();
        self.visit_columns(&mut |c| {
            if !out.contains(c) {
                out.push(c.clone());
            }
        });
        out
    }

    fn visit_columns(&self, f: &mut dyn FnMut(&Vec<String>)) {
        match self {
            Self::And(a, b) | Self::Or(a, b) => {
                a.visit_columns(f);
                b.visit_columns(f);
            }
            Self::Not(a) => a.visit_columns(f),
            Self::Compare { column, .. }
            | Self::In { column, .. }
            | Self::IsNull { column, .. }
            | Self::Between { column, .. } => f(column),
        }
    }

    /// Evaluates the predicate with three-valued logic. `value_of(column)` gives each
    /// column's value as its Delta type and log string (`None` for null), or an error
    /// for a column it does not know.
    ///
    /// Returns `Some(true)` / `Some(false)`, or `None` for unknown (SQL null).
    ///
    /// # Errors
    /// [`Error::InvalidPredicate`] when a literal does not fit the column's type, or the
    /// column's value does not parse as its type; errors of `value_of` pass through.
    pub fn evaluate<'a>(&self, value_of: &ValueOf<'a>) -> Result<Option<bool>> {
        Ok(match self {
            Self::And(a, b) => match (a.evaluate(value_of)?, b.evaluate(value_of)?) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Self::Or(a, b) => match (a.evaluate(value_of)?, b.evaluate(value_of)?) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Self::Not(a) => a.evaluate(value_of)?.map(|v| !v),
            Self::IsNull { column, negated } => {
                let (_, value) = value_of(column)?;
                Some(value.is_none() != *negated)
            }
            Self::Compare { column, op, value } => {
                let (data_type, actual) = value_of(column)?;
                compare(column, data_type, actual, value)?.map(|o| op.holds(o))
            }
            Self::Between {
                column,
                low,
                high,
                negated,
            } => {
                let (data_type, actual) = value_of(column)?;
                let above = compare(column, data_type, actual, low)?.map(|o| o != Ordering::Less);
                let below =
                    compare(column, data_type, actual, high)?.map(|o| o != Ordering::Greater);
                let inside = match (above, below) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                inside.map(|v| v != *negated)
            }
            Self::In {
                column,
                values,
                negated,
            } => {
                let (data_type, actual) = value_of(column)?;
                let mut result = Some(false);
                for literal in values {
                    match compare(column, data_type, actual, literal)? {
                        Some(Ordering::Equal) => {
                            result = Some(true);
                            break;
                        }
                        None => result = None,
                        Some(_) => {}
                    }
                }
                result.map(|v| v != *negated)
            }
        })
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let col = |c: &Vec<String>| {
            c.iter()
                .map(|part| {
                    let plain = part
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphabetic() || c == '_')
                        && part.chars().all(|c| c.is_alphanumeric() || c == '_')
                        && !is_reserved(part);
                    if plain {
                        part.clone()
                    } else {
                        format!("`{}`", part.replace('`', "``"))
                    }
                })
                .collect::<Vec<_>>()
                .join(".")
        };
        match self {
            Self::And(a, b) => write!(f, "({a} AND {b})"),
            Self::Or(a, b) => write!(f, "({a} OR {b})"),
            Self::Not(a) => write!(f, "(NOT {a})"),
            Self::Compare { column, op, value } => {
                write!(f, "{} {} {value}", col(column), op.symbol())
            }
            Self::IsNull { column, negated } => write!(
                f,
                "{} IS {}NULL",
                col(column),
                if *negated { "NOT " } else { "" }
            ),
            Self::Between {
                column,
                low,
                high,
                negated,
            } => write!(
                f,
                "{} {}BETWEEN {low} AND {high}",
                col(column),
                if *negated { "NOT " } else { "" }
            ),
            Self::In {
                column,
                values,
                negated,
            } => {
                let list: Vec<String> = values.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "{} {}IN ({})",
                    col(column),
                    if *negated { "NOT " } else { "" },
                    list.join(", ")
                )
            }
        }
    }
}

/// Types a literal for comparison with `column` of `data_type`: `Ok(None)` for `NULL`.
///
/// # Errors
/// [`Error::InvalidPredicate`] naming the column when the literal does not fit its type.
pub fn typed_literal(
    column: &[String],
    data_type: &DataType,
    literal: &Literal,
) -> Result<Option<Typed>> {
    let literal_text = match literal {
        Literal::Null => return Ok(None),
        Literal::Bool(b) => b.to_string(),
        Literal::Number(n) | Literal::String(n) => n.clone(),
    };
    parse_typed(data_type, &literal_text)
        .map(Some)
        .ok_or_else(|| Error::InvalidPredicate {
            predicate: crate::column::format_path(column),
            message: format!(
                "literal {literal} does not fit column '{}' of type {data_type}",
                crate::column::format_path(column)
            ),
        })
}

fn compare(
    column: &[String],
    data_type: &DataType,
    actual: Option<&str>,
    literal: &Literal,
) -> Result<Option<Ordering>> {
    let bad = |message: String| Error::InvalidPredicate {
        predicate: crate::column::format_path(column),
        message,
    };
    let literal_text = match literal {
        Literal::Null => return Ok(None),
        Literal::Bool(b) => b.to_string(),
        Literal::Number(n) | Literal::String(n) => n.clone(),
    };
    let Some(right) = parse_typed(data_type, &literal_text) else {
        return Err(bad(format!(
            "literal {literal} does not fit column '{}' of type {data_type}",
            crate::column::format_path(column)
        )));
    };
    let Some(actual) = actual else {
        return Ok(None);
    };
    let left = parse_typed(data_type, actual).ok_or_else(|| {
        bad(format!(
            "value '{actual}' of column '{}' does not parse as {data_type}",
            crate::column::format_path(column)
        ))
    })?;
    Ok(left.compare(&right))
}

// ---- tokenizer and parser ---------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Quoted(String),
    Str(String),
    Number(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    Dot,
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(s) | Token::Number(s) => f.write_str(s),
            Token::Quoted(s) => write!(f, "`{s}`"),
            Token::Str(s) => write!(f, "'{s}'"),
            Token::Op(s) => f.write_str(s),
            Token::LParen => f.write_str("("),
            Token::RParen => f.write_str(")"),
            Token::Comma => f.write_str(","),
            Token::Dot => f.write_str("."),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<(usize, Token)>> {
    let err = |pos: usize, message: &str| Error::InvalidPredicate {
        predicate: text.to_string(),
        message: format!("{message} at character {}", pos + 1),
    };
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (pos, c) = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                out.push((pos, Token::LParen));
                i += 1;
            }
            ')' => {
                out.push((pos, Token::RParen));
                i += 1;
            }
            ',' => {
                out.push((pos, Token::Comma));
                i += 1;
            }
            '\'' | '`' | '"' => {
                let quote = c;
                let mut s = String::new();
                i += 1;
                loop {
                    let Some(&(_, c)) = chars.get(i) else {
                        return Err(err(pos, "unterminated quote"));
                    };
                    i += 1;
                    if c == quote {
                        if chars.get(i).map(|x| x.1) == Some(quote) {
                            s.push(quote);
                            i += 1;
                        } else {
                            break;
                        }
                    } else {
                        s.push(c);
                    }
                }
                out.push((
                    pos,
                    if quote == '\'' {
                        Token::Str(s)
                    } else {
                        Token::Quoted(s)
                    },
                ));
            }
            '=' | '!' | '<' | '>' => {
                let next = chars.get(i + 1).map(|x| x.1);
                let (op, len) = match (c, next) {
                    ('=', Some('=')) => ("=", 2),
                    ('=', _) => ("=", 1),
                    ('!', Some('=')) | ('<', Some('>')) => ("!=", 2),
                    ('<', Some('=')) => ("<=", 2),
                    ('>', Some('=')) => (">=", 2),
                    ('<', _) => ("<", 1),
                    ('>', _) => (">", 1),
                    _ => return Err(err(pos, "unexpected '!'")),
                };
                out.push((pos, Token::Op(op)));
                i += len;
            }
            c if c.is_ascii_digit()
                || ((c == '-' || c == '+' || c == '.')
                    && chars.get(i + 1).is_some_and(|x| x.1.is_ascii_digit())) =>
            {
                let start = i;
                i += 1;
                while i < chars.len()
                    && (chars[i].1.is_ascii_alphanumeric()
                        || chars[i].1 == '.'
                        || ((chars[i].1 == '-' || chars[i].1 == '+')
                            && matches!(chars[i - 1].1, 'e' | 'E')))
                {
                    i += 1;
                }
                let s: String = chars[start..i].iter().map(|x| x.1).collect();
                out.push((pos, Token::Number(s)));
            }
            '.' => {
                out.push((pos, Token::Dot));
                i += 1;
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].1.is_alphanumeric() || chars[i].1 == '_') {
                    i += 1;
                }
                let s: String = chars[start..i].iter().map(|x| x.1).collect();
                out.push((pos, Token::Ident(s)));
            }
            other => return Err(err(pos, &format!("unexpected character '{other}'"))),
        }
    }
    Ok(out)
}

/// The deepest nesting of parentheses and `NOT` a predicate may have.
pub const MAX_NESTING: usize = 64;
/// The most comparisons a predicate may hold. Evaluation recurses once per term, so both
/// limits keep it far from the end of a 2 MiB thread stack. (`IN` lists count as one term.)
pub const MAX_TERMS: usize = 256;

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(usize, Token)>,
    pos: usize,
    depth: usize,
    terms: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> Error {
        let at = self.tokens.get(self.pos).map_or_else(
            || "at the end".to_string(),
            |t| format!("at character {}", t.0 + 1),
        );
        Error::InvalidPredicate {
            predicate: self.text.to_string(),
            message: format!("{message} {at}"),
        }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|t| &t.1)
    }

    fn keyword(&mut self, word: &str) -> bool {
        if let Some(Token::Ident(s)) = self.peek()
            && s.eq_ignore_ascii_case(word)
        {
            self.pos += 1;
            return true;
        }
        false
    }

    fn expect(&mut self, token: &Token, what: &str) -> Result<()> {
        if self.peek() == Some(token) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected {what}")))
        }
    }

    fn or(&mut self) -> Result<Predicate> {
        let mut left = self.and()?;
        while self.keyword("OR") {
            left = Predicate::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Predicate> {
        let mut left = self.not()?;
        while self.keyword("AND") {
            left = Predicate::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Predicate> {
        let nested = self.peek() == Some(&Token::LParen)
            || matches!(self.peek(), Some(Token::Ident(w)) if w.eq_ignore_ascii_case("NOT"));
        if nested {
            self.depth += 1;
            if self.depth > MAX_NESTING {
                return Err(self.error(&format!(
                    "nesting deeper than {MAX_NESTING} parentheses or NOTs"
                )));
            }
        }
        let result = if self.keyword("NOT") {
            self.not().map(|p| Predicate::Not(Box::new(p)))
        } else if self.peek() == Some(&Token::LParen) {
            self.pos += 1;
            let inner = self.or()?;
            self.expect(&Token::RParen, "')'")?;
            Ok(inner)
        } else {
            self.terms += 1;
            if self.terms > MAX_TERMS {
                return Err(self.error(&format!("more than {MAX_TERMS} comparisons")));
            }
            self.comparison()
        };
        if nested {
            self.depth -= 1;
        }
        result
    }

    fn column(&mut self) -> Result<Vec<String>> {
        let mut path = Vec::new();
        loop {
            match self.peek().cloned() {
                Some(Token::Ident(s)) if !is_reserved(&s) => path.push(s),
                Some(Token::Quoted(s)) => path.push(s),
                _ => return Err(self.error("expected a column name")),
            }
            self.pos += 1;
            if self.peek() == Some(&Token::Dot) {
                self.pos += 1;
            } else {
                return Ok(path);
            }
        }
    }

    fn literal(&mut self) -> Result<Literal> {
        let token = self.peek().cloned();
        let literal = match token {
            Some(Token::Number(n)) => Literal::Number(n),
            Some(Token::Str(s)) => Literal::String(s),
            Some(Token::Ident(word)) => match word.to_ascii_uppercase().as_str() {
                "NULL" => Literal::Null,
                "TRUE" => Literal::Bool(true),
                "FALSE" => Literal::Bool(false),
                "DATE" | "TIMESTAMP" | "TIMESTAMP_NTZ" => {
                    self.pos += 1;
                    match self.peek().cloned() {
                        Some(Token::Str(s)) => Literal::String(s),
                        _ => return Err(self.error(&format!("expected a quoted {word} value"))),
                    }
                }
                _ => return Err(self.error("expected a literal")),
            },
            _ => return Err(self.error("expected a literal")),
        };
        self.pos += 1;
        Ok(literal)
    }

    fn comparison(&mut self) -> Result<Predicate> {
        let column = self.column()?;
        if self.keyword("IS") {
            let negated = self.keyword("NOT");
            if !self.keyword("NULL") {
                return Err(self.error("expected NULL"));
            }
            return Ok(Predicate::IsNull { column, negated });
        }
        let negated = self.keyword("NOT");
        if self.keyword("IN") {
            self.expect(&Token::LParen, "'('")?;
            let mut values = vec![self.literal()?];
            while self.peek() == Some(&Token::Comma) {
                self.pos += 1;
                values.push(self.literal()?);
            }
            self.expect(&Token::RParen, "')'")?;
            return Ok(Predicate::In {
                column,
                values,
                negated,
            });
        }
        if self.keyword("BETWEEN") {
            let low = self.literal()?;
            if !self.keyword("AND") {
                return Err(self.error("expected AND"));
            }
            let high = self.literal()?;
            return Ok(Predicate::Between {
                column,
                low,
                high,
                negated,
            });
        }
        if negated {
            return Err(self.error("expected IN or BETWEEN after NOT"));
        }
        let op = match self.peek() {
            Some(Token::Op(op)) => match *op {
                "=" => CompareOp::Eq,
                "!=" => CompareOp::NotEq,
                "<" => CompareOp::Lt,
                "<=" => CompareOp::LtEq,
                ">" => CompareOp::Gt,
                _ => CompareOp::GtEq,
            },
            _ => return Err(self.error("expected a comparison operator")),
        };
        self.pos += 1;
        let value = self.literal()?;
        Ok(Predicate::Compare { column, op, value })
    }
}

fn is_reserved(word: &str) -> bool {
    [
        "AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE",
    ]
    .iter()
    .any(|k| k.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltalake::kernel::PrimitiveType;

    /// An unquoted date is three numbers: the error says how to write it.
    #[test]
    fn an_unquoted_date_gets_a_hint() {
        let err = Predicate::parse("date = 2023-04-13 AND x > 1")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unexpected '-04' (a date or timestamp is written quoted: '2023-04-13') at character 12"),
            "{err}"
        );
        // Other trailing tokens get no hint.
        let err = Predicate::parse("x = 1 2").unwrap_err().to_string();
        assert!(err.contains("unexpected '2' at character 7"), "{err}");
    }

    fn eval(text: &str, columns: &[(&str, DataType, Option<&str>)]) -> Option<bool> {
        let p = Predicate::parse(text).unwrap();
        let columns: Vec<(String, DataType, Option<String>)> = columns
            .iter()
            .map(|(n, t, v)| ((*n).to_string(), t.clone(), v.map(ToString::to_string)))
            .collect();
        p.evaluate(&|c: &[String]| {
            columns
                .iter()
                .find(|(n, _, _)| *n == c.join("."))
                .map(|(_, t, v)| (t, v.as_deref()))
                .ok_or_else(|| Error::Internal("no column".into()))
        })
        .unwrap()
    }

    #[test]
    fn three_valued_logic_on_typed_partition_values() {
        let int = DataType::Primitive(PrimitiveType::Integer);
        let string = DataType::Primitive(PrimitiveType::String);
        let date = DataType::Primitive(PrimitiveType::Date);
        struct Case {
            text: &'static str,
            expected: Option<bool>,
        }
        for Case { text, expected } in [
            Case {
                text: "p = 10",
                expected: Some(true),
            },
            Case {
                text: "p > 9 AND p < 11",
                expected: Some(true),
            },
            Case {
                text: "p >= 11 OR s = 'a'",
                expected: Some(true),
            },
            Case {
                text: "p != 10",
                expected: Some(false),
            },
            Case {
                text: "p IN (1, 2, 10)",
                expected: Some(true),
            },
            Case {
                text: "p NOT IN (1, 2)",
                expected: Some(true),
            },
            Case {
                text: "p IN (1, NULL)",
                expected: None,
            },
            Case {
                text: "n = 1",
                expected: None,
            },
            Case {
                text: "NOT n = 1",
                expected: None,
            },
            Case {
                text: "n IS NULL",
                expected: Some(true),
            },
            Case {
                text: "n IS NOT NULL OR p = 10",
                expected: Some(true),
            },
            Case {
                text: "n = 1 AND p = 11",
                expected: Some(false),
            },
            Case {
                text: "p BETWEEN 10 AND 12",
                expected: Some(true),
            },
            Case {
                text: "p NOT BETWEEN 10 AND 12",
                expected: Some(false),
            },
            Case {
                text: "d < DATE '2024-02-01'",
                expected: Some(true),
            },
            Case {
                text: "s = 'it''s'",
                expected: Some(false),
            },
            Case {
                text: "(s = 'a' OR s = 'b') AND NOT p = 3",
                expected: Some(true),
            },
            Case {
                text: "p == 10",
                expected: Some(true),
            },
            Case {
                text: "p <> 10",
                expected: Some(false),
            },
        ] {
            let got = eval(
                text,
                &[
                    ("p", int.clone(), Some("10")),
                    ("s", string.clone(), Some("a")),
                    ("n", int.clone(), None),
                    ("d", date.clone(), Some("2024-01-31")),
                ],
            );
            assert_eq!(got, expected, "{text}");
        }
    }

    #[test]
    fn numbers_compare_as_numbers_not_text() {
        let int = DataType::Primitive(PrimitiveType::Long);
        assert_eq!(eval("p < 10", &[("p", int.clone(), Some("9"))]), Some(true));
        assert_eq!(eval("p > -5", &[("p", int, Some("-4"))]), Some(true));
    }

    #[test]
    fn parse_errors_say_where() {
        for text in [
            "p =",
            "p = 1 AND",
            "(p = 1",
            "p ~ 1",
            "= 1",
            "p IN 1",
            "'a' = p",
            "p = 'x",
        ] {
            let err = Predicate::parse(text).unwrap_err().to_string();
            assert!(err.contains("invalid predicate"), "{text}: {err}");
        }
    }

    #[test]
    fn huge_predicates_are_refused_not_overflowing_the_stack() {
        let deep = format!("{}p = 1{}", "(".repeat(2000), ")".repeat(2000));
        assert!(
            Predicate::parse(&deep)
                .unwrap_err()
                .to_string()
                .contains("nesting")
        );
        let nots = format!("{}p = 1", "NOT ".repeat(10_000));
        assert!(
            Predicate::parse(&nots)
                .unwrap_err()
                .to_string()
                .contains("nesting")
        );
        let long = vec!["p = 1"; 3000].join(" OR ");
        assert!(
            Predicate::parse(&long)
                .unwrap_err()
                .to_string()
                .contains("comparisons")
        );
        let fine = vec!["p = 1"; MAX_TERMS].join(" OR ");
        let p = Predicate::parse(&fine).unwrap();
        let int = DataType::Primitive(PrimitiveType::Integer);
        assert_eq!(
            p.evaluate(&|_c: &[String]| Ok((&int, Some("1")))).unwrap(),
            Some(true)
        );
        let nested = format!(
            "{}p = 1{}",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert!(Predicate::parse(&nested).is_ok());
    }

    #[test]
    fn literal_type_mismatch_names_the_column() {
        let p = Predicate::parse("p = 'abc'").unwrap();
        let int = DataType::Primitive(PrimitiveType::Integer);
        let err = p
            .evaluate(&|_c: &[String]| Ok((&int, Some("1"))))
            .unwrap_err()
            .to_string();
        assert!(err.contains("'p'") && err.contains("'abc'"), "{err}");
    }

    #[test]
    fn display_round_trips() {
        let text = "((a = 1 OR b.c IN ('x', 'y')) AND (NOT d IS NULL))";
        let p = Predicate::parse(text).unwrap();
        assert_eq!(Predicate::parse(&p.to_string()).unwrap(), p);
    }
}
