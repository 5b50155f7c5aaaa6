//! Turns a query history (a file of SQL statements: Spark SQL, Databricks SQL, Trino) into a
//! workload: the predicates its queries applied to one table, each counted ([`extract`]).
//!
//! # What counts
//! Every query block is walked: top-level queries, CTEs, derived tables, subqueries in
//! expressions, set operations, `INSERT ... SELECT`, `CREATE TABLE ... AS`, `CREATE VIEW ... AS`,
//! and the `WHERE` of `UPDATE` / `DELETE` (Delta skips files for those too). Each reference to
//! the table in a `FROM` / `JOIN` is a *scan*; its predicate is the `AND` of the conjuncts of its
//! block's `WHERE` and `ON` conditions that only use its columns and compare them to literals.
//! Filters written above a CTE, view or derived table are not traced down to the table.
//!
//! # Soundness
//! A predicate must hold for every row of the table the query needs, so it may only *widen*:
//! a conjunct that cannot be used is dropped, and an `OR` keeps, per branch, the branch's usable
//! conjuncts (`(p_brand = 'x' AND l_qty < 5) OR l_qty > 9` gives `l_qty < 5 OR l_qty > 9`: a
//! row that matches a branch matches what is left of it), failing when some branch keeps none.
//! Under `NOT` nothing may be dropped. An outer join's `ON` does not filter the side it
//! preserves, and a condition on rows an outer join may null-extend is kept only if it rejects
//! null rows (`x > 1` does, `x IS NULL OR x > 1` does not).
//!
//! # Conditions and literals
//! Kept: `col op literal` (either way round), `[NOT] BETWEEN`, `[NOT] IN (...)`, `IS [NOT]
//! NULL`, a boolean column alone, and `NOT` / `AND` / `OR` of those; a function of a column,
//! two columns compared, `LIKE`, a subquery... make a conjunct unusable. Literals are numbers
//! (as written), strings, booleans, `NULL`, `DATE` / `TIMESTAMP` (typed, cast, `to_date`), and
//! constants folded exactly: number `+`/`-` number, a date or timestamp `+`/`-` an interval
//! (`INTERVAL '90' DAY`, `INTERVAL 3 MONTHS`, `INTERVAL '1 year'`), `date_add`, `date_sub`,
//! `add_months`, Trino's `date_add('day', n, x)`. Month steps clamp to the month's end.
//!
//! # Dialects
//! Each statement is parsed with the generic dialect first, so `"x"` is a quoted name (ANSI,
//! Trino), not a Spark string: `col = "x"` compares two columns and is dropped. A parser
//! message's line and column count from the start of its statement ([`Skipped::line`]).

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use sqlparser::ast::{
    BinaryOperator as Op, DataType, DateTimeField as Field, Expr, FromTable, Function, FunctionArg,
    FunctionArgExpr, FunctionArguments, JoinConstraint, JoinOperator as Join, ObjectName,
    ObjectNamePart, Query, SelectItem, SetExpr, Statement, TableFactor, TableWithJoins,
    TimezoneInfo, UnaryOperator, UpdateTableFromKind, Value,
};
use sqlparser::dialect::{DatabricksDialect, Dialect, GenericDialect, HiveDialect, MySqlDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

/// What [`extract`] found in a query history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extraction {
    /// The distinct predicates, most frequent first, ties in text order.
    pub predicates: Vec<ExtractedPredicate>,
    /// Statements that gave no predicate, or have a scan that gave none, in input order.
    pub skipped: Vec<Skipped>,
    /// Non-empty statements read.
    pub statements: usize,
    /// References to the table in `FROM` / `JOIN` clauses: scans.
    pub scans: usize,
}

/// One predicate, in the language of `crate::predicate`, and how many scans applied it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedPredicate {
    /// The predicate, e.g. `l_shipdate >= DATE '1994-01-01' AND l_quantity < 24`.
    pub text: String,
    /// How many scans applied exactly this predicate.
    pub count: u64,
}

/// A statement that gave no predicate, or has a scan that gave none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The statement's number, from 1, counting non-empty statements.
    pub statement: usize,
    /// The 1-based line where the statement starts.
    pub line: usize,
    /// Why: the parser's message, `not a query: SET`, `does not read <table>`, ...
    pub reason: String,
}

/// Statements with more operators are refused: `sqlparser` builds a chain (`a + b + ...`,
/// `x OR y OR ...`) as a tree as deep as it is long, and dropping the tree recurses.
const MAX_OPERATORS: usize = 10_000;
/// The deepest expression followed when converting a condition or folding a literal.
const MAX_DEPTH: usize = 48;
/// Mirrors `crate::predicate::MAX_TERMS`: later conjuncts are dropped (which only widens).
const MAX_TERMS: usize = 256;
/// Mirrors `crate::predicate::MAX_NESTING`.
const MAX_NESTING: usize = 64;

/// Extracts the predicates that the statements in `sql` applied to `table`.
///
/// `table` is the name as queries write it: a relation matches when its last name part equals
/// it (case-insensitively), or, for `db.schema.t`, when its last parts equal all of them.
/// `columns` are the table's top-level columns: a column written without a qualifier is the
/// table's when it is one of them and the block reads the table once; output uses their
/// spelling. With no `columns`, only qualified references (`l.x`) count, spelled as written.
///
/// Statements are split on top-level `;` and parsed one by one with the generic dialect, then
/// Databricks, then Hive. No input makes this panic.
#[must_use]
pub fn extract(sql: &str, table: &str, columns: &[String]) -> Extraction {
    let parts = table.split('.').map(|p| p.trim_matches(['`', '"']));
    let target = Target {
        parts: parts.filter(|p| !p.is_empty()).collect(),
        columns,
    };
    let name = target.parts.join(".");
    let mut out = Extraction::default();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (text, line, operators) in split(sql) {
        out.statements += 1;
        let reason = match text.and_then(|text| walk(text, operators, &target)) {
            Err(reason) => Some(reason),
            Ok(walker) => {
                out.scans += walker.scans;
                for text in walker.found {
                    *counts.entry(text).or_default() += 1;
                }
                if walker.scans == 0 {
                    Some(format!("does not read {name}"))
                } else {
                    let bare = "without a predicate that can skip files";
                    // Without the table's columns an unqualified `col` is not known to be
                    // one of its columns: say so, the usual cause.
                    let hint = if target.columns.is_empty() {
                        format!(
                            " (without the table's columns only qualified references such as {name}.col count: give the columns, `workload extract --schema TABLE`)"
                        )
                    } else {
                        String::new()
                    };
                    (walker.bare > 0).then(|| format!("scans {name} {bare}{hint}"))
                }
            }
        };
        let statement = out.statements;
        out.skipped.extend(reason.map(|reason| Skipped {
            statement,
            line,
            reason,
        }));
    }
    let found = counts
        .into_iter()
        .map(|(text, count)| ExtractedPredicate { text, count });
    out.predicates = found.collect();
    out.predicates
        .sort_by(|a, b| b.count.cmp(&a.count).then(a.text.cmp(&b.text)));
    out
}

/// Parses and walks one statement; the reason it is skipped when it cannot be.
fn walk<'a>(text: &str, operators: usize, target: &'a Target) -> Result<Walker<'a>, String> {
    if operators > MAX_OPERATORS {
        return Err(format!(
            "too many operators ({operators} > {MAX_OPERATORS})"
        ));
    }
    let mut first = None;
    for dialect in [
        &GenericDialect {} as &dyn Dialect,
        &DatabricksDialect {},
        &HiveDialect {},
    ] {
        match Parser::parse_sql(dialect, text) {
            Ok(statements) => {
                let (ctes, found) = (Vec::new(), Vec::new());
                let mut walker = Walker {
                    target,
                    ctes,
                    scans: 0,
                    found,
                    bare: 0,
                };
                let queries = statements.iter().filter(|s| walker.statement(s)).count();
                if queries == 0 {
                    let kind = text.split_whitespace().next().unwrap_or_default();
                    return Err(format!("not a query: {}", kind.to_uppercase()));
                }
                return Ok(walker);
            }
            Err(e) => first = first.or(Some(e.to_string())),
        }
    }
    Err(first.unwrap_or_default())
}

/// Splits `sql` on top-level `;` with `sqlparser`'s tokenizer, so that `;` in strings, quoted
/// names and comments does not split: each statement's text (or, for the rest of an input that
/// cannot be tokenized, the tokenizer's error), its first line, and how many operators it has.
fn split(sql: &str) -> Vec<(Result<&str, String>, usize, usize)> {
    let mut tokens = Vec::new();
    let mut tokenizer = Tokenizer::new(&GenericDialect {}, sql);
    let mut error = tokenizer.tokenize_with_location_into_buf(&mut tokens).err();
    // Only to split: MySQL reads Spark's backslash escapes (`'it\'s'`), which no dialect
    // used for parsing does; such a statement then fails to parse, alone.
    for dialect in [&DatabricksDialect {} as &dyn Dialect, &MySqlDialect {}] {
        let mut retry = Vec::new();
        if error.is_none() {
            break;
        } else if Tokenizer::new(dialect, sql)
            .tokenize_with_location_into_buf(&mut retry)
            .is_ok()
        {
            (tokens, error) = (retry, None);
        }
    }
    let mut cursor = Cursor {
        chars: sql.chars(),
        line: 1,
        column: 1,
        offset: 0,
    };
    let (mut pieces, mut start, mut operators, mut after_operand) = (vec![], None, 0, false);
    for t in &tokens {
        match &t.token {
            Token::Whitespace(_) | Token::EOF => {}
            Token::SemiColon => {
                let end = cursor.seek(t.span.start);
                if let Some((from, line)) = start.take() {
                    pieces.push((Ok(sql.get(from..end).unwrap_or_default()), line, operators));
                }
                operators = 0;
            }
            token => {
                if start.is_none() {
                    start = Some((cursor.seek(t.span.start), cursor.line()));
                }
                // Count binary operators: not operands, separators, or a sign before an operand.
                let chain = [
                    Keyword::AND,
                    Keyword::OR,
                    Keyword::UNION,
                    Keyword::EXCEPT,
                    Keyword::INTERSECT,
                ];
                let chain = matches!(token, Token::Word(w) if chain.contains(&w.keyword));
                let operand = matches!(token, Token::Word(_) | Token::Number(..) | Token::RParen)
                    || matches!(
                        token,
                        Token::SingleQuotedString(_) | Token::DoubleQuotedString(_)
                    );
                let separator = matches!(token, Token::Comma | Token::LParen | Token::Period);
                let sign = matches!(token, Token::Plus | Token::Minus) && !after_operand;
                operators += usize::from(chain || !(operand || separator || sign));
                after_operand = operand && !chain;
            }
        }
    }
    match (error, start) {
        (None, Some((from, line))) => {
            pieces.push((Ok(sql.get(from..).unwrap_or_default()), line, operators));
        }
        (None, None) => {}
        (Some(e), start) => {
            let line = start.map_or_else(
                || usize::try_from(e.location.line).unwrap_or(usize::MAX),
                |s| s.1,
            );
            pieces.push((Err(e.to_string()), line, operators));
        }
    }
    pieces
}

/// Turns the tokenizer's line/column locations into byte offsets, moving forward only.
struct Cursor<'a> {
    chars: std::str::Chars<'a>,
    line: u64,
    column: u64,
    offset: usize,
}

impl Cursor<'_> {
    fn seek(&mut self, to: Location) -> usize {
        while (self.line, self.column) < (to.line, to.column) {
            let Some(c) = self.chars.next() else { break };
            self.offset += c.len_utf8();
            (self.line, self.column) = if c == '\n' {
                (self.line + 1, 1)
            } else {
                (self.line, self.column + 1)
            };
        }
        self.offset
    }

    fn line(&self) -> usize {
        usize::try_from(self.line).unwrap_or(usize::MAX)
    }
}

/// Case-insensitive name equality.
fn same(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
}

/// Whether the last parts of `name` are `parts`.
fn ends_with<S: AsRef<str>>(name: &ObjectName, parts: &[S]) -> bool {
    let pairs = name.0.iter().rev().zip(parts.iter().rev());
    name.0.len() >= parts.len()
        && pairs
            .into_iter()
            .all(|(n, p)| matches!(n, ObjectNamePart::Identifier(i) if same(&i.value, p.as_ref())))
}

/// The table whose scans are sought.
struct Target<'a> {
    parts: Vec<&'a str>,
    columns: &'a [String],
}

impl Target<'_> {
    /// The column's spelling in `columns`, if it is one.
    fn column(&self, name: &str) -> Option<String> {
        self.columns.iter().find(|c| same(c, name)).cloned()
    }
}

/// How a scan's columns are qualified: by its alias, or by (the end of) the table's name.
#[derive(Clone, Copy)]
enum Qualifier<'q> {
    Alias(&'q str),
    Name(&'q ObjectName),
}

/// A block's relations: a scan of the target or not, and whether an outer join may have
/// null-extended its rows.
type Rels<'q> = Vec<(Option<Qualifier<'q>>, bool)>;
/// Conditions, each with the relations it filters and whether those may be null-extended.
type Filters<'q> = Vec<(&'q Expr, Vec<(usize, bool)>)>;

/// Walks statements, collecting the predicates of the target's scans.
struct Walker<'a> {
    target: &'a Target<'a>,
    /// The names of the CTEs in scope: a CTE named like the table hides it.
    ctes: Vec<String>,
    scans: usize,
    found: Vec<String>,
    /// Scans that gave no predicate.
    bare: usize,
}

impl Walker<'_> {
    /// Walks a statement; false when it is not a kind that reads tables.
    fn statement(&mut self, statement: &Statement) -> bool {
        match statement {
            Statement::Query(q) => self.query(q),
            Statement::Insert(insert) => insert.source.as_ref().is_some_and(|q| self.query(q)),
            Statement::CreateTable(create) => create.query.as_ref().is_some_and(|q| self.query(q)),
            Statement::CreateView(view) => self.query(&view.query),
            Statement::Delete(delete) => {
                let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) =
                    &delete.from;
                let mut from: Vec<_> = from.iter().collect();
                from.extend(delete.using.iter().flatten());
                self.block(&from, delete.selection.as_ref(), &[])
            }
            Statement::Update(update) => {
                let mut from = vec![&update.table];
                if let Some(UpdateTableFromKind::BeforeSet(f) | UpdateTableFromKind::AfterSet(f)) =
                    &update.from
                {
                    from.extend(f);
                }
                let values: Vec<_> = update.assignments.iter().map(|a| &a.value).collect();
                self.block(&from, update.selection.as_ref(), &values)
            }
            _ => false,
        }
    }

    /// Walks a query; true (as [`Self::statement`] for a query).
    fn query(&mut self, query: &Query) -> bool {
        let outer = self.ctes.len();
        for cte in query
            .with
            .iter()
            .flat_map(|w| w.cte_tables.iter().map(move |c| (w.recursive, c)))
        {
            // A CTE hides the table after its definition, and inside it when recursive.
            let name = cte.1.alias.name.value.clone();
            if cte.0 {
                self.ctes.push(name.clone());
            }
            self.query(&cte.1.query);
            self.ctes.push(name);
        }
        let mut stack = vec![query.body.as_ref()];
        while let Some(body) = stack.pop() {
            match body {
                SetExpr::Select(s) => {
                    let items = s.projection.iter().filter_map(|item| match item {
                        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                            Some(e)
                        }
                        _ => None,
                    });
                    let others: Vec<_> = items.chain(&s.having).collect();
                    self.block(
                        &s.from.iter().collect::<Vec<_>>(),
                        s.selection.as_ref(),
                        &others,
                    );
                }
                SetExpr::Query(q) => _ = self.query(q),
                SetExpr::SetOperation { left, right, .. } => stack.extend([right.as_ref(), left]),
                SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) => {
                    _ = self.statement(s);
                }
                _ => {}
            }
        }
        self.ctes.truncate(outer);
        true
    }

    /// One query block: finds the target's scans in `from`, gives each its predicate, and walks
    /// the subqueries in the conditions and in `others`. True.
    fn block(
        &mut self,
        from: &[&TableWithJoins],
        selection: Option<&Expr>,
        others: &[&Expr],
    ) -> bool {
        let (mut rels, mut filters) = (Vec::new(), Vec::new());
        for twj in from {
            self.relations(twj, &mut rels, &mut filters);
        }
        if let Some(expr) = selection {
            filters.push((
                expr,
                rels.iter().enumerate().map(|(i, r)| (i, r.1)).collect(),
            ));
        }
        let unqualified = rels.iter().filter(|r| r.0.is_some()).count() == 1;
        for (i, rel) in rels.iter().enumerate() {
            let Some(qualifier) = rel.0 else { continue };
            self.scans += 1;
            let scope = Scope {
                target: self.target,
                qualifier,
                unqualified,
            };
            let mut kept = Vec::new();
            for (expr, targets) in &filters {
                let Some(&(_, nullable)) = targets.iter().find(|t| t.0 == i) else {
                    continue;
                };
                for conjunct in flatten(expr, &Op::And) {
                    match scope.convert(conjunct, false, 0) {
                        Some(p) if nullable && p.on_null() == Some(true) => {}
                        Some(Pred::And(ps)) => kept.extend(ps),
                        Some(p) => kept.push(p),
                        None => {}
                    }
                }
            }
            let mut terms = 0;
            kept.retain(|p| {
                let fits = terms + p.terms() <= MAX_TERMS && p.nesting() < MAX_NESTING;
                terms += if fits { p.terms() } else { 0 };
                fits
            });
            match collapse(kept, Pred::And) {
                Some(p) => self.found.push(p.render(false)),
                None => self.bare += 1,
            }
        }
        for expr in filters.iter().map(|f| f.0).chain(others.iter().copied()) {
            self.subqueries(expr);
        }
        true
    }

    /// Adds a `FROM` item's relations and its `ON` conditions, each with the relations it
    /// filters: an outer join's `ON` does not filter the side it preserves.
    fn relations<'q>(
        &mut self,
        twj: &'q TableWithJoins,
        rels: &mut Rels<'q>,
        filters: &mut Filters<'q>,
    ) {
        let first = rels.len();
        self.factor(&twj.relation, rels, filters);
        for join in &twj.joins {
            let mid = rels.len();
            self.factor(&join.relation, rels, filters);
            // Whether ON filters (left, right), and which sides become nullable.
            let (on, filtered, nullable) = match &join.join_operator {
                Join::Join(c)
                | Join::Inner(c)
                | Join::CrossJoin(c)
                | Join::StraightJoin(c)
                | Join::Semi(c)
                | Join::LeftSemi(c)
                | Join::RightSemi(c)
                | Join::AsOf { constraint: c, .. } => (Some(c), (true, true), (false, false)),
                Join::Left(c) | Join::LeftOuter(c) => (Some(c), (false, true), (false, true)),
                Join::Right(c) | Join::RightOuter(c) => (Some(c), (true, false), (true, false)),
                Join::FullOuter(c) => (Some(c), (false, false), (true, true)),
                Join::Anti(c) | Join::LeftAnti(c) => (Some(c), (false, true), (false, false)),
                Join::RightAnti(c) => (Some(c), (true, false), (false, false)),
                Join::OuterApply => (None, (false, false), (false, true)),
                _ => (None, (false, false), (false, false)),
            };
            let side = |i: usize, (left, right): (bool, bool)| if i < mid { left } else { right };
            if let Some(JoinConstraint::On(expr)) = on {
                let targets = rels.iter().enumerate().skip(first);
                let targets = targets.filter(|(i, _)| side(*i, filtered));
                filters.push((expr, targets.map(|(i, r)| (i, r.1)).collect()));
            }
            for (i, rel) in rels.iter_mut().enumerate().skip(first) {
                rel.1 |= side(i, nullable);
            }
        }
    }

    fn factor<'q>(
        &mut self,
        factor: &'q TableFactor,
        rels: &mut Rels<'q>,
        filters: &mut Filters<'q>,
    ) {
        let scan = match factor {
            TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } => {
                let cte = name.0.len() == 1 && self.ctes.iter().any(|c| ends_with(name, &[c]));
                let ours =
                    !cte && !self.target.parts.is_empty() && ends_with(name, &self.target.parts);
                ours.then(|| {
                    alias
                        .as_ref()
                        .map_or(Qualifier::Name(name), |a| Qualifier::Alias(&a.name.value))
                })
            }
            TableFactor::Derived { subquery, .. } => {
                self.query(subquery);
                None
            }
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => return self.relations(table_with_joins, rels, filters),
            _ => None,
        };
        rels.push((scan, false));
    }

    /// Walks the queries nested in `root` (iteratively: operator chains may be long).
    fn subqueries(&mut self, root: &Expr) {
        let mut stack = vec![root];
        while let Some(e) = stack.pop() {
            match e {
                Expr::Subquery(q) | Expr::Exists { subquery: q, .. } => _ = self.query(q),
                Expr::InSubquery { expr, subquery, .. } => {
                    stack.push(expr);
                    self.query(subquery);
                }
                Expr::BinaryOp { left, right, .. } => stack.extend([left.as_ref(), right]),
                Expr::Like { expr, pattern, .. } | Expr::ILike { expr, pattern, .. } => {
                    stack.extend([expr.as_ref(), pattern]);
                }
                Expr::UnaryOp { expr, .. }
                | Expr::Cast { expr, .. }
                | Expr::Nested(expr)
                | Expr::IsNull(expr)
                | Expr::IsNotNull(expr) => stack.push(expr),
                Expr::InList { expr, list, .. } => stack.extend(list.iter().chain([expr.as_ref()])),
                Expr::Between {
                    expr, low, high, ..
                } => stack.extend([expr.as_ref(), low, high]),
                Expr::Case {
                    operand,
                    conditions,
                    else_result,
                    ..
                } => {
                    stack.extend(operand.iter().chain(else_result).map(|b| &**b));
                    stack.extend(conditions.iter().flat_map(|c| [&c.condition, &c.result]));
                }
                Expr::Function(f) => match &f.args {
                    FunctionArguments::Subquery(q) => _ = self.query(q),
                    FunctionArguments::List(list) => {
                        stack.extend(list.args.iter().filter_map(|a| match a {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Some(x),
                            _ => None,
                        }));
                    }
                    FunctionArguments::None => {}
                },
                _ => {}
            }
        }
    }
}

/// The operands of a chain of `op` (`AND` or `OR`), through parentheses, in order.
fn flatten<'e>(root: &'e Expr, op: &Op) -> Vec<&'e Expr> {
    let (mut out, mut stack) = (Vec::new(), vec![root]);
    while let Some(e) = stack.pop() {
        match e {
            Expr::BinaryOp { left, op: o, right } if o == op => {
                stack.extend([right.as_ref(), left]);
            }
            Expr::Nested(inner) if matches!(&**inner, Expr::BinaryOp { op: o, .. } if o == op) => {
                stack.push(inner);
            }
            Expr::Nested(inner) if matches!(&**inner, Expr::Nested(_)) => stack.push(inner),
            _ => out.push(e),
        }
    }
    out
}

/// How column references resolve for one scan.
struct Scope<'a, 'q> {
    target: &'a Target<'a>,
    qualifier: Qualifier<'q>,
    /// Whether unqualified names may be the scan's (false when the block reads the table twice).
    unqualified: bool,
}

impl Scope<'_, '_> {
    /// The target column `e` names for this scan, in the table's spelling.
    fn column(&self, e: &Expr) -> Option<String> {
        let name = match e {
            Expr::Nested(inner) => return self.column(inner),
            Expr::Identifier(id) if self.unqualified => self.target.column(&id.value),
            Expr::CompoundIdentifier(ids) => {
                let (column, qualifier) = ids.split_last()?;
                let parts: Vec<&str> = qualifier.iter().map(|q| q.value.as_str()).collect();
                let ours = match self.qualifier {
                    Qualifier::Alias(alias) => matches!(parts[..], [q] if same(q, alias)),
                    Qualifier::Name(name) => !parts.is_empty() && ends_with(name, &parts),
                };
                match (ours, self.target.columns.is_empty()) {
                    (false, _) => None,
                    (true, true) => Some(column.value.clone()),
                    (true, false) => self.target.column(&column.value),
                }
            }
            _ => None,
        }?;
        (!name.chars().any(char::is_control)).then_some(name)
    }

    /// Converts a condition to a predicate on this scan. Unless `exact`, the parts that cannot
    /// be used are dropped (see the module docs); if `exact`, all of it must convert.
    fn convert(&self, e: &Expr, exact: bool, depth: usize) -> Option<Pred> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (d, col) = (depth + 1, |x: &Expr| self.column(x));
        let (lit, null) = (
            |x: &Expr| literal(x, d),
            |x: &Expr| Some(Pred::IsNull(col(x)?)),
        );
        match e {
            Expr::Nested(inner) => self.convert(inner, exact, d),
            Expr::BinaryOp { op: Op::And, .. } => {
                let mut parts = Vec::new();
                for c in flatten(e, &Op::And) {
                    match self.convert(c, exact, d) {
                        Some(Pred::And(ps)) => parts.extend(ps),
                        Some(p) => parts.push(p),
                        None if exact => return None,
                        None => {}
                    }
                }
                collapse(parts, Pred::And)
            }
            Expr::BinaryOp { op: Op::Or, .. } => {
                let mut parts = Vec::new();
                for c in flatten(e, &Op::Or) {
                    match self.convert(c, exact, d)? {
                        Pred::Or(ps) => parts.extend(ps),
                        p => parts.push(p),
                    }
                }
                collapse(parts, Pred::Or)
            }
            Expr::UnaryOp {
                op: UnaryOperator::Not | UnaryOperator::BangNot,
                expr,
            } => Some(Pred::Not(Box::new(self.convert(expr, true, d)?))),
            Expr::BinaryOp { left, op, right } => {
                let (op, flipped) = match op {
                    Op::Eq => ("=", "="),
                    Op::NotEq => ("!=", "!="),
                    Op::Lt => ("<", ">"),
                    Op::LtEq => ("<=", ">="),
                    Op::Gt => (">", "<"),
                    Op::GtEq => (">=", "<="),
                    _ => return None,
                };
                match col(left) {
                    Some(c) => Some(Pred::Cmp(c, op, lit(right)?)),
                    None => Some(Pred::Cmp(col(right)?, flipped, lit(left)?)),
                }
            }
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => Some(Pred::Between(col(expr)?, *negated, lit(low)?, lit(high)?)),
            Expr::InList {
                expr,
                list,
                negated,
            } if !list.is_empty() => {
                let values = list.iter().map(lit).collect::<Option<_>>()?;
                Some(Pred::In(col(expr)?, *negated, values))
            }
            Expr::IsNull(x) => null(x),
            Expr::IsNotNull(x) => Some(Pred::Not(Box::new(null(x)?))),
            // A boolean column on its own: `WHERE is_open` is `is_open = TRUE`.
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                Some(Pred::Cmp(col(e)?, "=", Lit::Bool(true)))
            }
            _ => None,
        }
    }
}

fn collapse(mut parts: Vec<Pred>, group: fn(Vec<Pred>) -> Pred) -> Option<Pred> {
    match parts.len() {
        0 | 1 => parts.pop(),
        _ => Some(group(parts)),
    }
}

/// A predicate in the output language. `IS NOT NULL` is `Not(IsNull)`.
enum Pred {
    Cmp(String, &'static str, Lit),
    In(String, bool, Vec<Lit>),
    Between(String, bool, Lit, Lit),
    IsNull(String),
    Not(Box<Pred>),
    And(Vec<Pred>),
    Or(Vec<Pred>),
}

impl Pred {
    /// Its value on a row whose columns are all null (`None`: unknown): a condition that is
    /// not true there rejects the rows an outer join null-extends.
    fn on_null(&self) -> Option<bool> {
        let values = |ps: &Vec<Pred>| ps.iter().map(Self::on_null).collect::<Vec<_>>();
        match self {
            Self::IsNull(_) => Some(true),
            Self::Cmp(..) | Self::In(..) | Self::Between(..) => None,
            Self::Not(p) => p.on_null().map(|v| !v),
            Self::And(ps) if values(ps).contains(&Some(false)) => Some(false),
            Self::Or(ps) if values(ps).contains(&Some(true)) => Some(true),
            Self::And(ps) | Self::Or(ps) => {
                let known = values(ps).iter().all(Option::is_some);
                known.then_some(matches!(self, Self::And(_)))
            }
        }
    }

    /// Comparisons, as `crate::predicate` counts them.
    fn terms(&self) -> usize {
        match self {
            Self::Not(p) => p.terms(),
            Self::And(ps) | Self::Or(ps) => ps.iter().map(Self::terms).sum(),
            _ => 1,
        }
    }

    /// Parentheses and `NOT`s around the deepest comparison (an upper bound).
    fn nesting(&self) -> usize {
        match self {
            Self::Not(p) => 2 + p.nesting(),
            Self::And(ps) | Self::Or(ps) => 1 + ps.iter().map(Self::nesting).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// The text; a group (`AND`, `OR`) in another operator gets parentheses when `nested`.
    fn render(&self, nested: bool) -> String {
        let not = |negated: &bool| if *negated { "NOT " } else { "" };
        match self {
            Self::Cmp(c, op, v) => format!("{} {op} {v}", quote(c)),
            Self::In(c, negated, vs) => {
                let vs: Vec<String> = vs.iter().map(ToString::to_string).collect();
                format!("{} {}IN ({})", quote(c), not(negated), vs.join(", "))
            }
            Self::Between(c, negated, lo, hi) => {
                format!("{} {}BETWEEN {lo} AND {hi}", quote(c), not(negated))
            }
            Self::IsNull(c) => format!("{} IS NULL", quote(c)),
            Self::Not(p) => match p.as_ref() {
                Self::IsNull(c) => format!("{} IS NOT NULL", quote(c)),
                p => format!("NOT {}", p.render(true)),
            },
            Self::And(ps) | Self::Or(ps) => {
                let sep = if matches!(self, Self::And(_)) {
                    " AND "
                } else {
                    " OR "
                };
                let text = ps
                    .iter()
                    .map(|p| p.render(true))
                    .collect::<Vec<_>>()
                    .join(sep);
                if nested { format!("({text})") } else { text }
            }
        }
    }
}

/// A column name as the predicate language writes it: bare, or in backquotes.
fn quote(name: &str) -> String {
    const KEYWORDS: [&str; 11] = [
        "AND",
        "OR",
        "NOT",
        "IN",
        "IS",
        "NULL",
        "BETWEEN",
        "TRUE",
        "FALSE",
        "DATE",
        "TIMESTAMP",
    ];
    let mut chars = name.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(name));
    if plain {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

/// A literal. Numbers keep their text; dates are days since 1970-01-01; timestamps are days
/// and microseconds into the day.
#[derive(Clone, Debug, PartialEq)]
enum Lit {
    Num(String),
    Str(String),
    Bool(bool),
    Null,
    Date(i64),
    Ts(i64, i64),
}

impl fmt::Display for Lit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Num(n) => f.write_str(n),
            Self::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Self::Bool(b) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
            Self::Null => f.write_str("NULL"),
            Self::Date(days) => write!(f, "DATE '{}'", date_text(*days)),
            Self::Ts(days, micros) => {
                let (secs, frac) = (micros / 1_000_000, micros % 1_000_000);
                let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
                write!(f, "TIMESTAMP '{} {h:02}:{m:02}:{s:02}", date_text(*days))?;
                if frac != 0 {
                    write!(f, ".{frac:06}")?;
                }
                f.write_char('\'')
            }
        }
    }
}

/// Evaluates a constant expression: plain literals, typed and cast dates and timestamps, `+`
/// and `-` of numbers (exactly) and of a date or timestamp and an interval, date functions.
fn literal(e: &Expr, depth: usize) -> Option<Lit> {
    if depth > MAX_DEPTH {
        return None;
    }
    let d = depth + 1;
    let lit = match e {
        Expr::Nested(inner) => literal(inner, d)?,
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) if is_number(n) => Lit::Num(n.clone()),
            Value::SingleQuotedString(s) => Lit::Str(s.clone()),
            Value::Boolean(b) => Lit::Bool(*b),
            Value::Null => Lit::Null,
            _ => return None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match literal(expr, d)? {
            Lit::Num(n) if n.starts_with('-') => Lit::Num(n.replacen('-', "", 1)),
            Lit::Num(n) if n.starts_with('.') => Lit::Num(format!("-0{n}")),
            Lit::Num(n) => Lit::Num(format!("-{n}")),
            _ => return None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Plus,
            expr,
        } => Some(literal(expr, d)?).filter(|l| matches!(l, Lit::Num(_)))?,
        Expr::TypedString(t) => match &t.value.value {
            Value::SingleQuotedString(s) => typed(&t.data_type, Lit::Str(s.clone()))?,
            _ => return None,
        },
        Expr::Cast {
            expr,
            data_type,
            format: None,
            ..
        } => typed(data_type, literal(expr, d)?)?,
        Expr::BinaryOp {
            left,
            op: op @ (Op::Plus | Op::Minus),
            right,
        } => {
            let minus = *op == Op::Minus;
            if let Some(shift) = interval(right) {
                return shifted(&literal(left, d)?, shift, minus);
            }
            match (interval(left), literal(left, d), minus) {
                (Some(shift), _, false) => shifted(&literal(right, d)?, shift, false)?,
                (_, Some(Lit::Num(a)), _) => match literal(right, d)? {
                    Lit::Num(b) => Lit::Num(add(&a, &b, minus)?),
                    _ => return None,
                },
                // Spark: `date + n` adds days.
                (_, Some(date @ Lit::Date(_)), _) => match literal(right, d)? {
                    Lit::Num(n) => shifted(&date, Shift::Days(n.parse().ok()?), minus)?,
                    _ => return None,
                },
                _ => return None,
            }
        }
        Expr::Function(f) => function(f, d)?,
        _ => return None,
    };
    Some(lit).filter(|l| !matches!(l, Lit::Str(s) if s.chars().any(char::is_control)))
}

/// A literal string (or date) read as a `DATE` or `TIMESTAMP` value.
fn typed(data_type: &DataType, lit: Lit) -> Option<Lit> {
    let timestamp = matches!(data_type, DataType::TimestampNtz(_) | DataType::Datetime(_))
        || matches!(
            data_type,
            DataType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone)
        );
    match (lit, data_type) {
        (Lit::Str(s), DataType::Date) => parse_date(&s).map(Lit::Date),
        (date @ Lit::Date(_), DataType::Date) => Some(date),
        (Lit::Str(s), _) if timestamp => parse_timestamp(&s),
        (Lit::Date(days), _) if timestamp => Some(Lit::Ts(days, 0)),
        (ts @ Lit::Ts(..), _) if timestamp => Some(ts),
        _ => None,
    }
}

/// `date_add` / `date_sub` / `add_months` (Spark), `date_add(unit, n, x)` (Trino, Databricks),
/// `to_date` of a string.
fn function(f: &Function, depth: usize) -> Option<Lit> {
    let (Some(ObjectNamePart::Identifier(name)), FunctionArguments::List(list)) =
        (f.name.0.last(), &f.args)
    else {
        return None;
    };
    let args = list.args.iter().map(|a| match a {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
        _ => None,
    });
    let args = args
        .collect::<Option<Vec<_>>>()
        .filter(|_| f.filter.is_none() && f.over.is_none())?;
    let int = |e: &Expr| match literal(e, depth) {
        Some(Lit::Num(n)) => n.parse::<i64>().ok(),
        _ => None,
    };
    let date = |e: &Expr| match literal(e, depth)? {
        Lit::Date(days) | Lit::Ts(days, _) => Some(Lit::Date(days)),
        Lit::Str(s) => parse_date(&s).map(Lit::Date),
        _ => None,
    };
    match (name.value.to_lowercase().as_str(), &args[..]) {
        ("date_add", [x, n]) => shifted(&date(x)?, Shift::Days(int(n)?), false),
        ("date_sub", [x, n]) => shifted(&date(x)?, Shift::Days(int(n)?), true),
        ("add_months", [x, n]) => shifted(&date(x)?, Shift::Months(int(n)?), false),
        ("date_add" | "dateadd" | "timestampadd", [unit, n, x]) => {
            let unit = match (unit, literal(unit, depth)) {
                (Expr::Identifier(i), _) => i.value.clone(),
                (_, Some(Lit::Str(s))) => s,
                _ => return None,
            };
            shifted(&literal(x, depth)?, shift(&unit, int(n)?)?, false)
        }
        ("to_date", [x]) => date(x),
        _ => None,
    }
}

/// An interval: months (a year is 12), days (a week is 7), or microseconds.
#[derive(Clone, Copy)]
enum Shift {
    Months(i64),
    Days(i64),
    Micros(i64),
}

/// `INTERVAL '90' DAY`, `INTERVAL '90' DAY (3)`, `INTERVAL 3 MONTHS`, `INTERVAL '1 year'`.
fn interval(e: &Expr) -> Option<Shift> {
    let iv = match e {
        Expr::Nested(inner) => return interval(inner),
        Expr::Interval(iv) if iv.last_field.is_none() => iv,
        _ => return None,
    };
    let (Lit::Num(text) | Lit::Str(text)) = literal(&iv.value, 0)? else {
        return None;
    };
    let unit = match &iv.leading_field {
        None => {
            let words: Vec<&str> = text.split_whitespace().collect();
            let [n, unit] = words[..] else { return None };
            return shift(unit, n.parse().ok()?);
        }
        Some(Field::Year | Field::Years) => "year",
        Some(Field::Month | Field::Months) => "month",
        Some(Field::Week(_) | Field::Weeks) => "week",
        Some(Field::Day | Field::Days) => "day",
        Some(Field::Hour | Field::Hours) => "hour",
        Some(Field::Minute | Field::Minutes) => "minute",
        Some(Field::Second | Field::Seconds) => "second",
        Some(_) => return None,
    };
    shift(unit, text.trim().parse().ok()?)
}

fn shift(unit: &str, n: i64) -> Option<Shift> {
    let unit = unit.to_lowercase();
    Some(match unit.strip_suffix('s').unwrap_or(&unit) {
        "year" => Shift::Months(n.checked_mul(12)?),
        "month" => Shift::Months(n),
        "week" => Shift::Days(n.checked_mul(7)?),
        "day" => Shift::Days(n),
        "hour" => Shift::Micros(n.checked_mul(3_600_000_000)?),
        "minute" => Shift::Micros(n.checked_mul(60_000_000)?),
        "second" => Shift::Micros(n.checked_mul(1_000_000)?),
        _ => return None,
    })
}

/// A date or timestamp moved by an interval (back if `minus`). A month step keeps the day of
/// the month, or the month's last day if it has fewer (2024-01-31 + 1 month = 2024-02-29).
fn shifted(lit: &Lit, shift: Shift, minus: bool) -> Option<Lit> {
    let sign = if minus { -1 } else { 1 };
    let (days, micros) = match *lit {
        Lit::Date(days) => (days, None),
        Lit::Ts(days, micros) => (days, Some(micros)),
        _ => return None,
    };
    let (days, micros) = match shift {
        Shift::Days(n) => (days.checked_add(n.checked_mul(sign)?)?, micros),
        Shift::Months(n) => {
            let (year, month, day) = civil(days);
            let index = (year * 12 + month - 1).checked_add(n.checked_mul(sign)?)?;
            let (year, month) = (index.div_euclid(12), index.rem_euclid(12) + 1);
            (
                make_date(year, month, day.min(month_days(year, month)))?,
                micros,
            )
        }
        Shift::Micros(n) => {
            let day = 86_400_000_000;
            let total =
                i128::from(days) * day + i128::from(micros?) + i128::from(n) * i128::from(sign);
            let micros = i64::try_from(total.rem_euclid(day)).ok();
            (i64::try_from(total.div_euclid(day)).ok()?, Some(micros?))
        }
    };
    let days = Some(days).filter(|d| (FIRST_DAY..=LAST_DAY).contains(d))?;
    Some(micros.map_or(Lit::Date(days), |m| Lit::Ts(days, m)))
}

/// The day numbers of 0001-01-01 and 9999-12-31, the dates the output can write.
const FIRST_DAY: i64 = -719_162;
const LAST_DAY: i64 = 2_932_896;

fn month_days(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The day number (days since 1970-01-01) of a valid date in years 1 to 9999, by Howard
/// Hinnant's `days_from_civil`.
fn make_date(year: i64, month: i64, day: i64) -> Option<i64> {
    let valid = (1..=9999).contains(&year) && (1..=12).contains(&month);
    if !valid || day < 1 || day > month_days(year, month) {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let (era, day_of_year) = (
        y.div_euclid(400),
        (153 * ((month + 9) % 12) + 2) / 5 + day - 1,
    );
    let year_of_era = y - era * 400;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

/// The year, month and day of a day number (`civil_from_days`).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let (day, month) = (
        day_of_year - (153 * mp + 2) / 5 + 1,
        if mp < 10 { mp + 3 } else { mp - 9 },
    );
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

fn date_text(days: i64) -> String {
    let (year, month, day) = civil(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The value of 1 to `max` ASCII digits.
fn digits(s: &str, max: usize) -> Option<i64> {
    let ok = !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit());
    s.parse().ok().filter(|_| ok)
}

/// `yyyy-m-d` (one or two digit month and day).
fn parse_date(s: &str) -> Option<i64> {
    let parts: Vec<&str> = s.trim().split('-').collect();
    let [year, month, day] = parts[..] else {
        return None;
    };
    let year = digits(year, 4).filter(|_| year.len() == 4)?;
    make_date(year, digits(month, 2)?, digits(day, 2)?)
}

/// `yyyy-mm-dd[( |T)hh:mm[:ss[.fraction]]]`, without a time zone; at most microseconds.
fn parse_timestamp(s: &str) -> Option<Lit> {
    let s = s.trim();
    let (date, time) = s.split_once([' ', 'T']).unwrap_or((s, ""));
    let days = parse_date(date)?;
    if time.is_empty() {
        return Some(Lit::Ts(days, 0));
    }
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let parts: Vec<&str> = clock.split(':').collect();
    let (h, m, s) = match parts[..] {
        [h, m] => (digits(h, 2)?, digits(m, 2)?, 0),
        [h, m, s] => (digits(h, 2)?, digits(m, 2)?, digits(s, 2)?),
        _ => return None,
    };
    // Nanoseconds, then exactly microseconds.
    let nanos = digits(&format!("{fraction:0<9}"), 9)?;
    if h > 23 || m > 59 || s > 59 || nanos % 1000 != 0 {
        return None;
    }
    Some(Lit::Ts(
        days,
        ((h * 60 + m) * 60 + s) * 1_000_000 + nanos / 1000,
    ))
}

/// Whether `n` is a number as the predicate language reads it: `12`, `.06`, `3.`, `1.5e-3`.
fn is_number(n: &str) -> bool {
    let (mantissa, exponent) = n.split_once(['e', 'E']).unwrap_or((n, "0"));
    let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    int.len() + frac.len() > 0
        && !exponent.is_empty()
        && [int, frac, exponent].iter().all(|p| digits(p))
}

/// A plain decimal number (`12`, `-0.5`, `.06`, `3.`): its digits and scale.
fn decimal(s: &str) -> Option<(i128, u32)> {
    let (negative, body) = s.strip_prefix('-').map_or((false, s), |rest| (true, rest));
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let all = format!("{int}{frac}");
    if all.is_empty() || all.len() > 36 || !all.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i128 = all.parse().ok()?;
    Some((
        if negative { -value } else { value },
        u32::try_from(frac.len()).ok()?,
    ))
}

/// `a + b` or `a - b` of two decimal texts, exactly, at the larger scale.
fn add(a: &str, b: &str, minus: bool) -> Option<String> {
    let ((a, a_scale), (b, b_scale)) = (decimal(a)?, decimal(b)?);
    let scale = a_scale.max(b_scale);
    let a = a.checked_mul(10_i128.checked_pow(scale - a_scale)?)?;
    let b = b.checked_mul(10_i128.checked_pow(scale - b_scale)?)?;
    let sum = if minus {
        a.checked_sub(b)?
    } else {
        a.checked_add(b)?
    };
    let width = usize::try_from(scale).ok()?;
    let digits = format!("{:0>w$}", sum.unsigned_abs(), w = width + 1);
    let (int, frac) = digits.split_at(digits.len() - width);
    let sign = if sum < 0 { "-" } else { "" };
    Some(if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(names: &str) -> Vec<String> {
        names.split_whitespace().map(String::from).collect()
    }

    /// The predicates' texts.
    fn texts(sql: &str, table: &str, columns: &str) -> Vec<String> {
        let found = extract(sql, table, &cols(columns)).predicates;
        found.into_iter().map(|p| p.text).collect()
    }

    /// The one predicate of an input.
    fn one(sql: &str, table: &str, columns: &str) -> String {
        let found = texts(sql, table, columns);
        assert_eq!(found.len(), 1, "{sql}: {found:?}");
        found.concat()
    }

    const LINEITEM: &str = "l_orderkey l_partkey l_quantity l_extendedprice l_discount \
        l_shipdate l_commitdate l_receiptdate l_shipinstruct l_shipmode";

    #[test]
    fn tpch_queries() {
        let q6 = "select sum(l_extendedprice * l_discount) as revenue from lineitem
            where l_shipdate >= date '1994-01-01'
              and l_shipdate < date '1994-01-01' + interval '1' year
              and l_discount between .06 - 0.01 and .06 + 0.01 and l_quantity < 24;";
        let q6_text = "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' \
            AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24";
        assert_eq!(one(q6, "lineitem", LINEITEM), q6_text);
        let q1 = "select l_returnflag, sum(l_quantity) as sum_qty from lineitem
            where l_shipdate <= date '1998-12-01' - interval '90' day (3)
            group by l_returnflag order by l_returnflag";
        assert_eq!(
            one(q1, "LINEITEM", LINEITEM),
            "l_shipdate <= DATE '1998-09-02'"
        );
        let q12 = "select l_shipmode, sum(case when o_orderpriority = '1-URGENT'
              or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count
            from orders, lineitem
            where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP')
              and l_commitdate < l_receiptdate and l_shipdate < l_commitdate
              and l_receiptdate >= date '1994-01-01'
              and l_receiptdate < date '1994-01-01' + interval '1' year
            group by l_shipmode order by l_shipmode";
        let q12_text = "l_shipmode IN ('MAIL', 'SHIP') AND l_receiptdate >= DATE '1994-01-01' \
            AND l_receiptdate < DATE '1995-01-01'";
        assert_eq!(one(q12, "lineitem", LINEITEM), q12_text);
        let orders = extract(q12, "orders", &cols("o_orderkey o_orderpriority"));
        let reason = "scans orders without a predicate that can skip files";
        assert_eq!(
            (orders.predicates.len(), orders.skipped[0].reason.as_str()),
            (0, reason)
        );
        // Without the columns, unqualified names are not known: the reason says so.
        let blind = extract(q12, "lineitem", &[]);
        assert_eq!(blind.predicates.len(), 0);
        assert_eq!(
            blind.skipped[0].reason,
            "scans lineitem without a predicate that can skip files (without the table's \
             columns only qualified references such as lineitem.col count: give the columns, \
             `workload extract --schema TABLE`)"
        );
        let branch = |brand: &str, container: &str, qty: u32, size: u32| {
            format!(
                "(p_partkey = l_partkey and p_brand = '{brand}' and p_container in ('{container}')
                  and l_quantity >= {qty} and l_quantity <= {qty} + 10
                  and p_size between 1 and {size} and l_shipmode in ('AIR', 'AIR REG')
                  and l_shipinstruct = 'DELIVER IN PERSON')"
            )
        };
        let q19 = format!(
            "select sum(l_extendedprice * (1 - l_discount)) as revenue from lineitem, part \
             where {} or {} or {}",
            branch("Brand#12", "SM CASE', 'SM BOX", 1, 5),
            branch("Brand#23", "MED BAG', 'MED BOX", 10, 10),
            branch("Brand#34", "LG CASE', 'LG BOX", 20, 15)
        );
        let kept = |lo: u32, hi: u32| {
            format!(
                "(l_quantity >= {lo} AND l_quantity <= {hi} AND l_shipmode IN ('AIR', 'AIR REG') \
                 AND l_shipinstruct = 'DELIVER IN PERSON')"
            )
        };
        let q19_text = format!("{} OR {} OR {}", kept(1, 11), kept(10, 20), kept(20, 30));
        assert_eq!(one(&q19, "lineitem", LINEITEM), q19_text);
        let part = one(&q19, "part", "p_partkey p_brand p_container p_size");
        assert!(
            part.starts_with(
                "(p_brand = 'Brand#12' AND p_container IN ('SM CASE', 'SM BOX') \
            AND p_size BETWEEN 1 AND 5) OR (p_brand = 'Brand#23' AND"
            ),
            "{part}"
        );
        // An OR branch that keeps nothing drops the whole OR.
        let sql = "select * from lineitem, part where l_quantity < 5 or p_size = 3";
        assert!(texts(sql, "lineitem", LINEITEM).is_empty());
    }

    #[test]
    fn aliases_and_join_conditions() {
        let sql = "SELECT * FROM sales s JOIN items i ON s.item = i.id \
            AND s.day >= DATE '2024-01-01' WHERE s.amount > 100 AND i.kind = 'x'";
        let expected = "day >= DATE '2024-01-01' AND amount > 100";
        assert_eq!(one(sql, "sales", "item day amount"), expected);
        let sql = sql.replace("sales s", "shop.Sales s");
        assert_eq!(one(&sql, "SHOP.sales", "item day amount"), expected);
        assert!(texts(&sql, "other.sales", "item day amount").is_empty());
        // Qualified with the table's name; an unqualified non-column is another table's.
        let sql = "select * from db.sales join x on y = 1 where sales.AMOUNT < 5 and kind = 'x'";
        assert_eq!(one(sql, "sales", "amount"), "amount < 5");
        // Outer joins: ON does not filter the preserved side; null-extended rows must be rejected.
        let left = "select * from sales s left join items i on s.item = i.id and s.day = 1 \
            and i.kind = 'x' where i.price > 3 and (i.kind is null or i.kind = 'y') and s.amount > 1";
        assert_eq!(one(left, "sales", "item day amount"), "amount > 1");
        assert_eq!(
            one(left, "items", "id kind price"),
            "kind = 'x' AND price > 3"
        );
        let full = "select * from a full join items i on i.kind = 'x' where i.kind is not null";
        assert_eq!(one(full, "items", "kind"), "kind IS NOT NULL");
        let right = "select * from items i right join a on i.kind = 'x' and a.k = 2";
        assert_eq!(one(right, "items", "kind"), "kind = 'x'");
        assert!(texts(&right.replace("items i right", "a right"), "items", "kind").is_empty());
    }

    #[test]
    fn statements_are_counted_and_skipped() {
        let sql = "-- history\nSELECT * FROM t WHERE a = 'x;y';\n\n\
            select count(*) from T where A = 'x;y' ;\nSET spark.sql.shuffle.partitions = 10;\n\
            SELECT * FROM t WHERE a = = 1;\n  ;\nselect * from u where a = 1;\nselect * from t;\n\
            insert into t values (1);\nselect 'it''s' from t where a in ('it''s') /* ; */";
        let out = extract(sql, "t", &cols("a"));
        assert_eq!((out.statements, out.scans), (8, 4));
        let counted = |text: &str, count| ExtractedPredicate {
            text: text.into(),
            count,
        };
        assert_eq!(
            out.predicates,
            [counted("a = 'x;y'", 2), counted("a IN ('it''s')", 1)]
        );
        let skipped: Vec<_> = out
            .skipped
            .iter()
            .map(|s| (s.statement, s.line, s.reason.as_str()))
            .collect();
        assert_eq!(skipped[0], (3, 5, "not a query: SET"));
        assert_eq!((skipped[1].0, skipped[1].1), (4, 6));
        assert!(
            skipped[1].2.starts_with("sql parser error: Expected"),
            "{}",
            skipped[1].2
        );
        let bare = "scans t without a predicate that can skip files";
        let rest = [
            (5, 8, "does not read t"),
            (6, 9, bare),
            (7, 10, "does not read t"),
        ];
        assert_eq!(skipped[2..], rest);
        // A Spark backslash escape fails to parse, alone.
        let sql = "select * from t where a = 'it\\'s';\nselect * from t where a = 1";
        let out = extract(sql, "t", &cols("a"));
        assert_eq!(
            (out.statements, out.predicates.len(), out.skipped.len()),
            (2, 1, 1)
        );
        // An unterminated string: the statements before it still count.
        let sql = "select * from t where a = 1;\n\n select * from t where a = 'oops";
        let out = extract(sql, "t", &cols("a"));
        assert_eq!(
            (out.statements, out.predicates.len(), out.skipped[0].line),
            (2, 1, 3)
        );
        assert!(
            out.skipped[0].reason.contains("Unterminated"),
            "{}",
            out.skipped[0].reason
        );
        assert_eq!(
            extract(" -- nothing\n ; ;", "t", &[]),
            Extraction::default()
        );
    }

    #[test]
    fn ctes_subqueries_and_statement_kinds() {
        let sql = "WITH recent AS (SELECT * FROM events WHERE ts >= TIMESTAMP '2024-05-01 00:00:00') \
            SELECT count(*) FROM recent WHERE kind IN ('a','b')";
        assert_eq!(
            one(sql, "events", "ts kind"),
            "ts >= TIMESTAMP '2024-05-01 00:00:00'"
        );
        let nested = "select * from o where k in (select k from events where kind = 'a') \
            and exists (select 1 from events e where e.k = o.k and e.ts > '2024') \
            and x > (select max(kind) from events where kind < 'z') \
            and y in (select k from (select * from events where kind = 'b') d) \
            union all select * from events where kind = 'c' \
            except select * from (select 1) where 1 = 1";
        let found = texts(nested, "events", "k ts kind");
        assert_eq!(
            found,
            [
                "kind < 'z'",
                "kind = 'a'",
                "kind = 'b'",
                "kind = 'c'",
                "ts > '2024'"
            ]
        );
        for sql in [
            "insert into x select * from events where kind = 'a'",
            "create table x as select * from events where kind = 'a'",
            "create view v as select * from events where kind = 'a'",
            "delete from events where kind = 'a'",
            "update events set ts = null where kind = 'a'",
            "select * from x join (with events as (select 1) select * from events) using (k) \
             union select * from t where k in (select k from events e where e.kind = 'a')",
        ] {
            assert_eq!(one(sql, "events", "kind ts"), "kind = 'a'", "{sql}");
        }
        // A CTE named like the table hides it.
        let sql = "with events as (select * from raw) select * from events where kind = 'a'";
        let out = extract(sql, "events", &cols("kind"));
        assert_eq!(out.skipped[0].reason, "does not read events");
        let out = extract("create table x (a int)", "x", &[]);
        assert_eq!(out.skipped[0].reason, "not a query: CREATE");
    }

    #[test]
    fn literal_and_predicate_forms() {
        let case = |w: &str| one(&format!("select * from t where {w}"), "t", "a b d ts n x");
        assert_eq!(
            case("5 < a and 'x' = b and DATE '2024-01-01' >= d"),
            "a > 5 AND b = 'x' AND d <= DATE '2024-01-01'"
        );
        assert_eq!(
            case(
                "a not between -1 and +2.5 and b not in ('x', 'y') and d is not null and n is null"
            ),
            "a NOT BETWEEN -1 AND 2.5 AND b NOT IN ('x', 'y') AND d IS NOT NULL AND n IS NULL"
        );
        assert_eq!(
            case(
                "d >= date_add(date '2024-02-27', 3) and d < date_sub('2024-03-01', 1) \
                and d != add_months(date '2024-01-31', 1) and d = date '2024-02-28' + 2"
            ),
            "d >= DATE '2024-03-01' AND d < DATE '2024-02-29' AND d != DATE '2024-02-29' \
             AND d = DATE '2024-03-01'"
        );
        assert_eq!(
            case(
                "d > date '2023-01-31' + interval '1' month and d < date '2024-02-29' - interval 1 year \
                and d = date '2024-01-01' + INTERVAL 90 DAYS and d = date '2024-05-31' - interval 3 months"
            ),
            "d > DATE '2023-02-28' AND d < DATE '2023-02-28' AND d = DATE '2024-03-31' \
             AND d = DATE '2024-02-29'"
        );
        assert_eq!(
            case(
                "d = cast('2024-1-5' as date) and ts < cast('2024-01-05T10:00:00.5' as timestamp) \
                and ts > timestamp '2024-01-01 23:00:00' + interval '2' hour \
                and d = date_add('month', -1, date '2024-03-31')"
            ),
            "d = DATE '2024-01-05' AND ts < TIMESTAMP '2024-01-05 10:00:00.500000' \
             AND ts > TIMESTAMP '2024-01-02 01:00:00' AND d = DATE '2024-02-29'"
        );
        assert_eq!(
            case(
                "x = -(-3) and x > -.5 and x < 1 - 3.25 and x <> - 0.0 and x >= -1.5E+3 and a \
                and not (b = 'x' or n > 1)"
            ),
            "x = 3 AND x > -0.5 AND x < -2.25 AND x != -0.0 AND x >= -1.5E+3 AND a = TRUE \
             AND NOT (b = 'x' OR n > 1)"
        );
        // Dropped: functions on the column, LIKE, columns compared, arithmetic on the column,
        // a bad date, a NOT over something unusable, a time zone, IS TRUE.
        let dropped = "upper(b) = 'X' and b like 'x%' and a = n and a + 1 = 2 \
            and d = date '2023-02-29' and not (a = 1 and upper(b) = 'X') \
            and ts = timestamp '2024-01-01 00:00:00+02:00' and a is true and x = 1";
        assert_eq!(case(dropped), "x = 1");
        // A self-join: unqualified columns are ambiguous, qualified ones go to their scan.
        let sql = "select * from t t1 join t t2 on t1.a = t2.a and t2.b = 'x' \
            where a = 1 and t1.d > 2";
        let out = extract(sql, "t", &cols("a b d"));
        let found: Vec<&str> = out.predicates.iter().map(|p| p.text.as_str()).collect();
        assert_eq!((out.scans, found), (2, vec!["b = 'x'", "d > 2"]));
        // More comparisons than the predicate language takes: the last conjuncts are dropped.
        let many: Vec<String> = (0..300).map(|i| format!("a <> {i}")).collect();
        assert_eq!(case(&many.join(" and ")).matches(" AND ").count(), 255);
    }

    #[test]
    fn column_names_are_quoted_when_needed() {
        let columns = cols("select Date x`y ok_1")
            .into_iter()
            .chain(["a b".to_string()]);
        let sql = "select * from t where `select` = 1 and \"a b\" = 2 and t.`A B` < 3 \
            and date > 4 and `x``y` = 5 and OK_1 = 6";
        let out = extract(sql, "t", &columns.collect::<Vec<_>>());
        let expected = "select = 1 AND `a b` = 2 AND `a b` < 3 AND `Date` > 4 AND `x``y` = 5 \
            AND ok_1 = 6";
        assert_eq!(out.predicates[0].text, expected);
    }

    #[test]
    fn dates_and_decimals() {
        let days = (FIRST_DAY..=LAST_DAY)
            .step_by(997)
            .chain([FIRST_DAY, LAST_DAY, -1, 11_016]);
        for day in days {
            let (year, month, d) = civil(day);
            assert_eq!(make_date(year, month, d), Some(day));
        }
        assert_eq!(
            (make_date(1970, 1, 1), make_date(1900, 2, 29)),
            (Some(0), None)
        );
        assert_eq!(shifted(&Lit::Date(LAST_DAY), Shift::Days(1), false), None);
        assert_eq!(shifted(&Lit::Date(0), Shift::Months(i64::MAX), false), None);
        let sums = [
            add(".06", "0.01", true),
            add("1", "10", false),
            add("-0.5", "0.25", false),
        ];
        assert_eq!(
            sums,
            [Some("0.05".into()), Some("11".into()), Some("-0.25".into())]
        );
        assert_eq!((add("1e5", "1", false), decimal("12x")), (None, None));
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let chain = format!(
            "select * from t where a = {}",
            vec!["1"; 20_000].join(" + ")
        );
        let out = extract(&chain, "t", &cols("a"));
        assert!(out.skipped[0].reason.starts_with("too many operators"));
        let deep = format!(
            "select * from t where {}a = 1{}",
            "(".repeat(300),
            ")".repeat(300)
        );
        assert_eq!(extract(&deep, "t", &cols("a")).skipped.len(), 1);
        for sql in [
            "",
            ";",
            "'",
            "`",
            "\"",
            "/*",
            "select",
            "select * from",
            "select * from t where a in ()",
            "select * from t where a = interval '1' day",
            "select * from t where a = date '99999-01-01'",
            "select * from t where a = date_add(date '9999-12-31', 1)",
            "select * from t where a = 1e400 + 1",
            "select * from t where a = timestamp '2024-01-01 1:2:3.4é'",
            "select * from t where a = 99999999999999999999999999999999999999 + 1",
            "\u{feff}select 1 from t",
            "select * from t where a = 'line\nbreak'",
        ] {
            assert!(extract(sql, "t", &cols("a")).predicates.is_empty(), "{sql}");
            let _ = extract(sql, "", &[]);
        }
    }
}
