//! Label selectors in Kubernetes' string syntax (`a=b,c!=d,e in (f,g),!h,i>3`), parsed by the
//! same grammar and with the same error messages as `labels.Parse`.

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One `key op values` term.
#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
    /// Sorted and deduplicated, as Kubernetes keeps them.
    values: Vec<String>,
}

/// A parsed label selector: the AND of its requirements. Empty selects everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    OpenPar,
    NotEquals,
    NotIn,
    LessThan,
}

fn keyword(s: &str) -> Option<Tok> {
    Some(match s {
        ")" => Tok::ClosedPar,
        "," => Tok::Comma,
        "!" => Tok::DoesNotExist,
        "==" => Tok::DoubleEquals,
        "=" => Tok::Equals,
        ">" => Tok::GreaterThan,
        "in" => Tok::In,
        "(" => Tok::OpenPar,
        "!=" => Tok::NotEquals,
        "notin" => Tok::NotIn,
        "<" => Tok::LessThan,
        _ => return None,
    })
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Splits a selector into tokens, ending with `End`.
fn lex(s: &str) -> Vec<(Tok, String)> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && is_space(chars[i]) {
            i += 1;
        }
        if i == chars.len() {
            out.push((Tok::End, String::new()));
            return out;
        }
        if is_special(chars[i]) {
            // The longest run of special characters that is a token.
            let mut best = (Tok::End, 0);
            let mut j = i;
            while j < chars.len() && is_special(chars[j]) {
                let lit: String = chars[i..=j].iter().collect();
                match keyword(&lit) {
                    Some(t) => best = (t, j + 1 - i),
                    None if best.1 > 0 => break,
                    None => {}
                }
                j += 1;
            }
            out.push((best.0, chars[i..i + best.1].iter().collect()));
            i += best.1;
        } else {
            let start = i;
            while i < chars.len() && !is_special(chars[i]) && !is_space(chars[i]) {
                i += 1;
            }
            let lit: String = chars[start..i].iter().collect();
            out.push((keyword(&lit).unwrap_or(Tok::Identifier), lit));
        }
    }
}

struct Parser {
    items: Vec<(Tok, String)>,
    pos: usize,
}

/// Where `in` and `notin` may be identifiers (label values, keys) or must be operators.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    KeyAndOperator,
    Values,
}

impl Parser {
    fn peek(&self, ctx: Context) -> (Tok, String) {
        let (tok, lit) = self.items[self.pos.min(self.items.len() - 1)].clone();
        match tok {
            Tok::In | Tok::NotIn if ctx == Context::Values => (Tok::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn next(&mut self, ctx: Context) -> (Tok, String) {
        let item = self.peek(ctx);
        self.pos += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.peek(Context::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let r = self.requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (tok, lit) = self.next(Context::Values);
                    match tok {
                        Tok::End => return Ok(requirements),
                        Tok::Comma => {
                            let (tok, lit) = self.peek(Context::Values);
                            if tok != Tok::Identifier && tok != Tok::DoesNotExist {
                                return Err(format!("found '{lit}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{lit}', expected: ',' or 'end of string'")),
                    }
                }
                Tok::End => return Ok(requirements),
                _ => return Err(format!("found '{lit}', expected: !, identifier, or 'end of string'")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (mut tok, mut key) = self.next(Context::Values);
        let negated = tok == Tok::DoesNotExist;
        if negated {
            (tok, key) = self.next(Context::Values);
        }
        if tok != Tok::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        if let Some(problem) = key_problem(&key) {
            return Err(format!("<nil>: {}", invalid(&key, &problem)));
        }
        let (after, _) = self.peek(Context::Values);
        if negated || after == Tok::End || after == Tok::Comma {
            let op = if negated { Op::DoesNotExist } else { Op::Exists };
            return Ok(Requirement { key, op, values: Vec::new() });
        }
        let (tok, lit) = self.next(Context::KeyAndOperator);
        let op = match tok {
            Tok::In => Op::In,
            Tok::NotIn => Op::NotIn,
            Tok::Equals | Tok::DoubleEquals => Op::In,
            Tok::NotEquals => Op::NotIn,
            Tok::GreaterThan => Op::GreaterThan,
            Tok::LessThan => Op::LessThan,
            _ => return Err(format!("found '{lit}', expected: in, notin, =, ==, !=, gt, lt")),
        };
        let mut values = match tok {
            Tok::In | Tok::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        values.sort();
        values.dedup();
        validate_values(&key, op, &values)?;
        Ok(Requirement { key, op, values })
    }

    /// `(a, b, ...)`; empty entries are the empty value.
    fn value_set(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.next(Context::Values);
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.peek(Context::Values);
        match tok {
            Tok::ClosedPar => {
                self.pos += 1;
                return Ok(vec![String::new()]);
            }
            Tok::Identifier | Tok::Comma => {}
            _ => return Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
        let mut values = Vec::new();
        loop {
            let (tok, lit) = self.next(Context::Values);
            match tok {
                Tok::Identifier => {
                    values.push(lit);
                    let (tok, lit) = self.peek(Context::Values);
                    match tok {
                        Tok::Comma => {}
                        Tok::ClosedPar => break,
                        _ => return Err(format!("found '{lit}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.peek(Context::Values).0 {
                        Tok::ClosedPar => {
                            values.push(String::new());
                            break;
                        }
                        Tok::Comma => {
                            self.pos += 1;
                            values.push(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
        let (tok, _) = self.next(Context::Values);
        if tok != Tok::ClosedPar {
            return Err(format!("found '{lit}', expected: ')'"));
        }
        Ok(values)
    }

    /// The value after `=`, `!=`, `>` or `<`; none is the empty value.
    fn exact_value(&mut self) -> Result<String, String> {
        let (tok, _) = self.peek(Context::Values);
        if tok == Tok::End || tok == Tok::Comma {
            return Ok(String::new());
        }
        match self.next(Context::Values) {
            (Tok::Identifier, lit) => Ok(lit),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }
}

/// A field error as Kubernetes prints it, without the field path.
fn invalid(value: &str, detail: &str) -> String {
    format!("Invalid value: {value:?}: {detail}")
}

fn validate_values(key: &str, op: Op, values: &[String]) -> Result<(), String> {
    let mut errors = Vec::new();
    if matches!(op, Op::GreaterThan | Op::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errors.push(format!(
                    "values[{i}]: {}",
                    invalid(v, "for 'Gt', 'Lt' operators, the value must be an integer")
                ));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        if let Some(problem) = label_value_problem(v) {
            errors.push(format!("values[{i}][{key}]: {}", invalid(v, &problem)));
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_EXAMPLES: &str = "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Kubernetes' `IsDNS1123Subdomain` messages.
fn dns_subdomain_problems(s: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if s.len() > 253 {
        problems.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    };
    if !s.split('.').all(label_ok) {
        problems.push(crate::meta::DNS1123_SUBDOMAIN.to_string());
    }
    problems
}

/// Kubernetes' `IsQualifiedName` messages for a label key, joined by `; `.
fn key_problem(key: &str) -> Option<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut problems = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_string());
            } else {
                problems.extend(dns_subdomain_problems(prefix).into_iter().map(|p| format!("prefix part {p}")));
            }
            *name
        }
        _ => {
            return Some(format!(
                "a qualified name {QUALIFIED_NAME_MSG} {QUALIFIED_NAME_EXAMPLES} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ))
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        problems.push(format!("name part {QUALIFIED_NAME_MSG} {QUALIFIED_NAME_EXAMPLES}"));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Kubernetes' `IsValidLabelValue` messages, joined by `; `.
fn label_value_problem(v: &str) -> Option<String> {
    let mut problems = Vec::new();
    if v.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    if !v.is_empty() && !is_qualified_name_part(v) {
        problems.push(format!(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '({QUALIFIED_NAME_FMT})?')"
        ));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

impl LabelSelector {
    /// Parses a selector; an invalid one is a 400 with Kubernetes' message.
    pub fn parse(s: &str) -> ApiResult<LabelSelector> {
        let mut parser = Parser { items: lex(s), pos: 0 };
        let mut requirements = parser.parse().map_err(ApiError::BadRequest)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    /// Whether this selector selects every object.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object with these labels (`metadata.labels`) is selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.and_then(|l| l.get(&r.key)).map(|v| v.as_str().unwrap_or_default());
            let number = || value.and_then(|v| v.parse::<i64>().ok()).zip(r.values[0].parse::<i64>().ok());
            match r.op {
                Op::In => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
                Op::NotIn => value.is_none_or(|v| !r.values.iter().any(|x| x == v)),
                Op::Exists => value.is_some(),
                Op::DoesNotExist => value.is_none(),
                Op::GreaterThan => number().is_some_and(|(have, want)| have > want),
                Op::LessThan => number().is_some_and(|(have, want)| have < want),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn err(s: &str) -> String {
        LabelSelector::parse(s).unwrap_err().to_string()
    }

    #[test]
    fn operators_match() {
        let l = labels(json!({"app": "web", "tier": "front", "n": "5", "empty": ""}));
        for s in [
            "",
            "  ",
            "app=web",
            "app==web",
            "app = web",
            "tier!=back",
            "missing!=x",
            "app in (web,db)",
            "app in (db, web )",
            "app notin (db)",
            "missing notin (x)",
            "app",
            "!missing",
            "n>3",
            "n<10",
            "app=web,tier=front",
            "empty=",
            "empty in ()",
            "empty in (,x)",
        ] {
            assert!(sel(s).matches(Some(&l)), "{s}");
        }
        for s in [
            "app=db",
            "app!=web",
            "missing=x",
            "app in (db)",
            "app notin (web)",
            "missing",
            "!app",
            "n>5",
            "app>1",
            "app,missing",
            "missing in (x)",
        ] {
            assert!(!sel(s).matches(Some(&l)), "{s}");
        }
        assert!(sel("!a").matches(None));
        assert!(!sel("a").matches(None));
        assert!(sel("").is_empty() && !sel("a").is_empty());
    }

    #[test]
    fn in_and_notin_can_be_keys_and_values() {
        let l = labels(json!({"in": "notin"}));
        assert!(sel("in=notin").matches(Some(&l)));
        assert!(sel("in in (notin)").matches(Some(&l)));
    }

    #[test]
    fn parse_errors_match_kubernetes() {
        assert_eq!(
            err("app:monolith"),
            "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert!(err("a/b/c=d").starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist"
        ));
        assert!(err("app.kubernetes_io/name=x").starts_with("unable to parse requirement: <nil>: Invalid value: \"app.kubernetes_io/name\": prefix part a lowercase RFC 1123 subdomain"));
        assert!(err("a=b c").starts_with("found 'c', expected: ',' or 'end of string'"));
        assert_eq!(err("a,"), "found '', expected: identifier after ','");
        assert_eq!(err("=a"), "found '=', expected: !, identifier, or 'end of string'");
        assert_eq!(err("a b"), "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
        assert_eq!(err("a in b"), "unable to parse requirement: found 'b' expected: '('");
        assert_eq!(err("a in (b"), "unable to parse requirement: found '', expected: ',' or ')'");
        assert_eq!(err("a=(b)"), "unable to parse requirement: found '(', expected: identifier");
        assert!(err("a=b!").starts_with("found '!'"));
        assert_eq!(err("a>b"), "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer");
        assert!(err("a>-").starts_with("unable to parse requirement: [values[0]: Invalid value: \"-\": for 'Gt'"));
        assert!(err("a=-b")
            .starts_with("unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be"));
        assert_eq!(LabelSelector::parse("a=").unwrap().requirements[0].values, [""]);
        assert_eq!(LabelSelector::parse("a b").unwrap_err().code(), http::StatusCode::BAD_REQUEST);
    }
}
