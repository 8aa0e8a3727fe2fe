//! Kubernetes' CEL regex library: `s.find(re)`, the first match of `re` in `s` (or `''`), and
//! `s.findAll(re)` / `s.findAll(re, n)`, the matches (at most `n` when `n` is not negative).

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::{DeclarationError, Env, ExecutionError};
use regex::Regex;

use super::support::{error, int, string, value};

/// Declares the library's functions.
pub fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("find", "string_find_string", STRING_TYPE, vec![STRING_TYPE], |a| {
        let found = compile("find", string(&a, 1)?)?.find(string(&a, 0)?).map(|m| m.as_str().to_string());
        value(found.unwrap_or_default())
    })?;
    env.add_member_overload("findAll", "string_find_all_string", STRING_TYPE, vec![STRING_TYPE], |a| {
        value(find_all(string(&a, 0)?, string(&a, 1)?, -1)?)
    })?;
    env.add_member_overload("findAll", "string_find_all_string_int", STRING_TYPE, vec![STRING_TYPE, INT_TYPE], |a| {
        value(find_all(string(&a, 0)?, string(&a, 1)?, int(&a, 2)?)?)
    })?;
    Ok(())
}

/// The matches of `re` in `s`: all of them when `n` is negative, else at most `n`.
fn find_all(s: &str, re: &str, n: i64) -> Result<Vec<String>, ExecutionError> {
    let re = compile("findAll", re)?;
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    Ok(re.find_iter(s).take(limit).map(|m| m.as_str().to_string()).collect())
}

/// `re` compiled, or Kubernetes' error: Go's words for the common mistakes.
fn compile(function: &str, re: &str) -> Result<Regex, ExecutionError> {
    Regex::new(re).map_err(|e| {
        let text = e.to_string();
        let rust = text.lines().last().unwrap_or_default().trim_start_matches("error: ");
        let go = match rust {
            "unclosed group" => "missing closing )",
            "unopened group" => "unexpected )",
            "unclosed character class" => "missing closing ]",
            "repetition operator missing expression" => "missing argument to repetition operator",
            "unrecognized escape sequence" => "invalid escape sequence",
            other => other,
        };
        error(function, format!("Illegal regex: error parsing regexp: {go}: `{re}`"))
    })
}

#[cfg(test)]
mod tests {
    use crate::expr::testing::eval;
    use cel::Value;

    #[test]
    fn finds_as_kubernetes_does() {
        assert_eq!(eval("'abc 123'.find('[0-9]+')"), Ok(Value::from("123")));
        assert_eq!(eval("'abc'.find('[0-9]+')"), Ok(Value::from("")));
        assert_eq!(eval("'123 abc 456'.findAll('[0-9]+')"), Ok(Value::from(vec!["123", "456"])));
        assert_eq!(eval("'123 abc 456'.findAll('[0-9]+', 1)"), Ok(Value::from(vec!["123"])));
        assert_eq!(eval("'123 abc 456'.findAll('[0-9]+', 0)"), Ok(Value::from(Vec::<String>::new())));
        assert_eq!(eval("'baaab'.findAll('a*')"), Ok(Value::from(vec!["", "aaa", ""])));
        assert_eq!(eval("'abc'.matches('^a.c$')"), Ok(Value::Bool(true)));
        let err = eval("'abc'.find('(a')").unwrap_err();
        assert!(err.ends_with("Illegal regex: error parsing regexp: missing closing ): `(a`"), "{err}");
        assert!(eval("'abc'.findAll('[a', 2)").unwrap_err().contains("Illegal regex: error parsing regexp: missing closing ]"));
    }
}
