//! The JSONPath of a printer column (`.spec.replicas`, `.status.conditions[?(@.type=="Ready")].status`,
//! `.spec.containers[*].image`, `.metadata.labels['app\.kubernetes\.io/name']`), parsed once per
//! definition and evaluated against each object of a table. Missing keys give no result, as
//! Kubernetes evaluates column paths.

use serde_json::Value;

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath(Vec<Step>);

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter { path: Vec<Step>, op: Option<(Op, Value)> },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl JsonPath {
    /// Parses `path` (with or without the template braces Kubernetes adds).
    pub fn parse(path: &str) -> Result<JsonPath, String> {
        let inner = path.trim();
        let inner = inner.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(inner);
        let mut chars: Vec<char> = inner.chars().collect();
        if chars.first() == Some(&'$') {
            chars.remove(0);
        }
        let (steps, rest) = steps(&chars)?;
        if !rest.is_empty() {
            return Err(format!("unexpected {:?}", rest.iter().collect::<String>()));
        }
        if steps.is_empty() {
            return Err("empty path".into());
        }
        Ok(JsonPath(steps))
    }

    /// Every value the path reaches in `obj`, in document order.
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        eval(&self.0, obj)
    }
}

fn eval<'a>(steps: &[Step], obj: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![obj];
    for step in steps {
        let mut next = Vec::new();
        for v in current {
            match step {
                Step::Field(name) => next.extend(v.get(name.as_str())),
                Step::Index(i) => {
                    if let Some(items) = v.as_array() {
                        let at = if *i < 0 { items.len() as i64 + i } else { *i };
                        next.extend(usize::try_from(at).ok().and_then(|a| items.get(a)));
                    }
                }
                Step::All => match v {
                    Value::Array(items) => next.extend(items.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter { path, op } => {
                    for item in v.as_array().into_iter().flatten() {
                        let found = eval(path, item);
                        let keep = match op {
                            None => !found.is_empty(),
                            Some((op, want)) => found.first().is_some_and(|got| compare(got, *op, want)),
                        };
                        if keep {
                            next.push(item);
                        }
                    }
                }
            }
        }
        current = next;
    }
    current
}

fn compare(got: &Value, op: Op, want: &Value) -> bool {
    let ord = match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64().partial_cmp(&b.as_f64()),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => return matches!(op, Op::Ne) != (got == want),
    };
    let Some(ord) = ord else { return false };
    match op {
        Op::Eq => ord.is_eq(),
        Op::Ne => ord.is_ne(),
        Op::Lt => ord.is_lt(),
        Op::Le => ord.is_le(),
        Op::Gt => ord.is_gt(),
        Op::Ge => ord.is_ge(),
    }
}

/// Steps until the input ends or a character that cannot start one (returned as the rest).
fn steps(mut s: &[char]) -> Result<(Vec<Step>, &[char]), String> {
    let mut out = Vec::new();
    loop {
        match s.first() {
            Some('.') => {
                s = &s[1..];
                if s.first() == Some(&'*') {
                    out.push(Step::All);
                    s = &s[1..];
                    continue;
                }
                let mut name = String::new();
                while let Some(&c) = s.first() {
                    match c {
                        '\\' if s.len() > 1 => {
                            name.push(s[1]);
                            s = &s[2..];
                        }
                        '.' | '[' | ' ' | ')' | '=' | '!' | '<' | '>' => break,
                        c => {
                            name.push(c);
                            s = &s[1..];
                        }
                    }
                }
                if name.is_empty() {
                    return Err("a field name must follow '.'".into());
                }
                out.push(Step::Field(name));
            }
            Some('[') => {
                let (step, rest) = bracket(&s[1..])?;
                out.push(step);
                s = rest;
            }
            _ => return Ok((out, s)),
        }
    }
}

/// `[n]`, `[*]`, `['name']`, `[?(@.path op literal)]`, after the `[`.
fn bracket(s: &[char]) -> Result<(Step, &[char]), String> {
    let close = |s: &[char]| -> Result<usize, String> { s.iter().position(|c| *c == ']').ok_or_else(|| "unclosed '['".to_string()) };
    match s.first() {
        Some('*') if s.get(1) == Some(&']') => Ok((Step::All, &s[2..])),
        Some('\'') | Some('"') => {
            let quote = s[0];
            let end = s[1..].iter().position(|c| *c == quote).ok_or("unclosed quote")? + 1;
            let name: String = s[1..end].iter().collect::<String>().replace("\\.", ".");
            if s.get(end + 1) != Some(&']') {
                return Err("expected ']' after a quoted name".into());
            }
            Ok((Step::Field(name), &s[end + 2..]))
        }
        Some('?') => {
            let rest = s.get(1..).filter(|r| r.first() == Some(&'(')).ok_or("expected '(' after '?'")?;
            let rest = rest[1..].strip_prefix(&['@']).ok_or("a filter starts with '@'")?;
            let (path, rest) = steps(rest)?;
            let rest = skip_spaces(rest);
            let (op, rest) = match rest {
                [')', ..] => (None, rest),
                _ => {
                    let (op, rest) = operator(rest)?;
                    let (literal, rest) = literal(skip_spaces(rest))?;
                    (Some((op, literal)), skip_spaces(rest))
                }
            };
            match rest {
                [')', ']', rest @ ..] => Ok((Step::Filter { path, op }, rest)),
                _ => Err("expected ')]' to end a filter".into()),
            }
        }
        _ => {
            let end = close(s)?;
            let text: String = s[..end].iter().collect();
            let i: i64 = text.trim().parse().map_err(|_| format!("invalid array index {text:?}"))?;
            Ok((Step::Index(i), &s[end + 1..]))
        }
    }
}

fn skip_spaces(mut s: &[char]) -> &[char] {
    while s.first() == Some(&' ') {
        s = &s[1..];
    }
    s
}

fn operator(s: &[char]) -> Result<(Op, &[char]), String> {
    Ok(match s {
        ['=', '=', rest @ ..] => (Op::Eq, rest),
        ['!', '=', rest @ ..] => (Op::Ne, rest),
        ['<', '=', rest @ ..] => (Op::Le, rest),
        ['>', '=', rest @ ..] => (Op::Ge, rest),
        ['<', rest @ ..] => (Op::Lt, rest),
        ['>', rest @ ..] => (Op::Gt, rest),
        _ => return Err("expected a comparison in the filter".into()),
    })
}

fn literal(s: &[char]) -> Result<(Value, &[char]), String> {
    match s.first() {
        Some(&q) if q == '"' || q == '\'' => {
            let end = s[1..].iter().position(|c| *c == q).ok_or("unclosed quote")? + 1;
            Ok((Value::String(s[1..end].iter().collect()), &s[end + 1..]))
        }
        _ => {
            let end = s.iter().position(|c| *c == ')' || *c == ' ').unwrap_or(s.len());
            let text: String = s[..end].iter().collect();
            let v: Value = serde_json::from_str(&text).map_err(|_| format!("invalid literal {text:?}"))?;
            Ok((v, &s[end..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn find(path: &str, obj: &Value) -> Vec<Value> {
        JsonPath::parse(path).unwrap().find(obj).into_iter().cloned().collect()
    }

    #[test]
    fn column_paths_reach_their_values() {
        let obj = json!({
            "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"replicas": 3, "containers": [{"image": "a"}, {"image": "b"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False", "n": 2}]}
        });
        assert_eq!(find(".spec.replicas", &obj), vec![json!(3)]);
        assert_eq!(find("{.spec.containers[*].image}", &obj), vec![json!("a"), json!("b")]);
        assert_eq!(find(".spec.containers[-1].image", &obj), vec![json!("b")]);
        assert_eq!(find(r#".status.conditions[?(@.type=="Ready")].status"#, &obj), vec![json!("True")]);
        assert_eq!(find(".status.conditions[?(@.n > 1)].type", &obj), vec![json!("Synced")]);
        assert_eq!(find(".status.conditions[?(@.n)].type", &obj), vec![json!("Synced")]);
        assert_eq!(find(r".metadata.labels.app\.kubernetes\.io/name", &obj), vec![json!("web")]);
        assert_eq!(find(".metadata.labels['app.kubernetes.io/name']", &obj), vec![json!("web")]);
        assert!(find(".spec.missing.deeper", &obj).is_empty());
    }

    #[test]
    fn malformed_paths_are_refused() {
        for bad in ["", ".", ".a[", ".a[x]", ".a[?(@.b=)]", ".a[?(b==1)]", "spec", ".a['b"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }
}
