//! Kubernetes' CEL format library: `format.named(name)` (an optional format), `format.<name>()`
//! for each named format, and `f.validate(s)`: none when `s` has the format, else the list of
//! what is wrong with it, in Kubernetes' words.

use std::sync::LazyLock;

use cel::common::types::{Kind, Type, STRING_TYPE};
use cel::{DeclarationError, Env, Value};
use regex::Regex;

use super::support::{opaque, optional, string, wrap};

const FORMAT_NAME: &str = "kubernetes.NamedFormat";
const FORMAT: Type = Type::simple_type(Kind::Opaque, FORMAT_NAME);

/// A named format, equal to another of the same name.
#[derive(Clone, Copy, Debug)]
pub struct Format {
    name: &'static str,
    validate: fn(&str) -> Vec<String>,
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

impl cel::objects::Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        FORMAT_NAME
    }
}

const FORMATS: [Format; 13] = [
    Format { name: "dns1123Label", validate: |s| dns1123_label(s.as_bytes()) },
    Format { name: "dns1123Subdomain", validate: |s| dns1123_subdomain(s.as_bytes()) },
    Format { name: "dns1035Label", validate: |s| dns1035_label(s.as_bytes()) },
    Format { name: "qualifiedName", validate: |s| qualified_name(s.as_bytes()) },
    Format { name: "dns1123LabelPrefix", validate: |s| dns1123_label(&mask_trailing_dash(s)) },
    Format { name: "dns1123SubdomainPrefix", validate: |s| dns1123_subdomain(&mask_trailing_dash(s)) },
    Format { name: "dns1035LabelPrefix", validate: |s| dns1035_label(&mask_trailing_dash(s)) },
    Format { name: "labelValue", validate: |s| label_value(s.as_bytes()) },
    Format { name: "uri", validate: |s| super::urls::parse_request_uri(s).err().into_iter().collect() },
    Format { name: "uuid", validate: |s| check(UUID.is_match(s), "does not match the UUID format") },
    Format { name: "byte", validate: |s| check(BASE64.is_match(s), "invalid base64") },
    Format { name: "date", validate: |s| check(is_date(s), "invalid date") },
    Format { name: "datetime", validate: |s| check(is_datetime(s), "invalid datetime") },
];

fn named(name: &str) -> Option<Format> {
    FORMATS.into_iter().find(|f| f.name == name)
}

/// Declares the library's functions.
pub fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(FORMAT)?;
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], |a| optional(named(string(&a, 0)?).map(|f| Value::Opaque(std::sync::Arc::new(f)))))?;
    env.add_member_overload("validate", "format-validate", FORMAT, vec![STRING_TYPE], |a| {
        let errors = (opaque::<Format>(&a, 0)?.validate)(string(&a, 1)?);
        optional((!errors.is_empty()).then(|| Value::from(errors)))
    })?;
    // `format.dns1123Label()` and the like: a function per format, as functions see only their
    // arguments.
    env.add_overload("format.dns1123Label", "format.dns1123Label", vec![], |_| wrap(FORMATS[0]))?;
    env.add_overload("format.dns1123Subdomain", "format.dns1123Subdomain", vec![], |_| wrap(FORMATS[1]))?;
    env.add_overload("format.dns1035Label", "format.dns1035Label", vec![], |_| wrap(FORMATS[2]))?;
    env.add_overload("format.qualifiedName", "format.qualifiedName", vec![], |_| wrap(FORMATS[3]))?;
    env.add_overload("format.dns1123LabelPrefix", "format.dns1123LabelPrefix", vec![], |_| wrap(FORMATS[4]))?;
    env.add_overload("format.dns1123SubdomainPrefix", "format.dns1123SubdomainPrefix", vec![], |_| wrap(FORMATS[5]))?;
    env.add_overload("format.dns1035LabelPrefix", "format.dns1035LabelPrefix", vec![], |_| wrap(FORMATS[6]))?;
    env.add_overload("format.labelValue", "format.labelValue", vec![], |_| wrap(FORMATS[7]))?;
    env.add_overload("format.uri", "format.uri", vec![], |_| wrap(FORMATS[8]))?;
    env.add_overload("format.uuid", "format.uuid", vec![], |_| wrap(FORMATS[9]))?;
    env.add_overload("format.byte", "format.byte", vec![], |_| wrap(FORMATS[10]))?;
    env.add_overload("format.date", "format.date", vec![], |_| wrap(FORMATS[11]))?;
    env.add_overload("format.datetime", "format.datetime", vec![], |_| wrap(FORMATS[12]))?;
    Ok(())
}

fn check(ok: bool, message: &str) -> Vec<String> {
    if ok { vec![] } else { vec![message.to_string()] }
}

const LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// Kubernetes' RegexError: the message, examples and the regular expression.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!("{msg} (e.g. {}regex used for validation is '{fmt}')", examples.join(" or "))
}

/// Non-empty, of `inner` bytes, starting with a `first` byte and ending with an alphanumeric one.
fn shaped(s: &[u8], first: fn(&u8) -> bool, inner: fn(&u8) -> bool, last: fn(&u8) -> bool) -> bool {
    matches!((s.first(), s.last()), (Some(f), Some(l)) if first(f) && last(l) && s.iter().all(inner))
}

fn lower_alnum(c: &u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn label_byte(c: &u8) -> bool {
    lower_alnum(c) || *c == b'-'
}

fn is_label(s: &[u8]) -> bool {
    shaped(s, lower_alnum, label_byte, lower_alnum)
}

fn is_subdomain(s: &[u8]) -> bool {
    s.split(|c| *c == b'.').all(is_label)
}

fn is_name(s: &[u8]) -> bool {
    shaped(s, u8::is_ascii_alphanumeric, |c| c.is_ascii_alphanumeric() || b"-_.".contains(c), u8::is_ascii_alphanumeric)
}

fn dns1123_label(s: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len(63));
    }
    if !is_label(s) {
        errors.push(if is_subdomain(s) { "must not contain dots".into() } else { regex_error(LABEL_MSG, LABEL_FMT, &["my-name", "123-abc"]) });
    }
    errors
}

fn dns1123_subdomain(s: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push(max_len(253));
    }
    if !is_subdomain(s) {
        errors.push(regex_error(SUBDOMAIN_MSG, SUBDOMAIN_FMT, &["example.com"]));
    }
    errors
}

fn dns1035_label(s: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len(63));
    }
    if !shaped(s, u8::is_ascii_lowercase, label_byte, lower_alnum) {
        errors.push(regex_error(DNS1035_MSG, DNS1035_FMT, &["my-name", "abc-123"]));
    }
    errors
}

fn qualified_name(s: &[u8]) -> Vec<String> {
    let parts: Vec<&[u8]> = s.split(|c| *c == b'/').collect();
    let mut errors = Vec::new();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(dns1123_subdomain(prefix).into_iter().map(|e| format!("prefix part {e}")));
            }
            name
        }
        _ => {
            let shape = regex_error(NAME_MSG, NAME_FMT, &["MyName", "my.name", "123-abc"]);
            return vec![format!("a qualified name {shape} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_len(63)));
    }
    if !is_name(name) {
        errors.push(format!("name part {}", regex_error(NAME_MSG, NAME_FMT, &["MyName", "my.name", "123-abc"])));
    }
    errors
}

fn label_value(s: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len(63));
    }
    if !s.is_empty() && !is_name(s) {
        errors.push(regex_error(VALUE_MSG, VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errors
}

/// What the prefix formats check instead of a name ending in `-`, to which a suffix is to be
/// appended: its last two bytes replaced by an `a` (as Kubernetes does).
fn mask_trailing_dash(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    match b.len() > 1 && b.ends_with(b"-") {
        true => [&b[..b.len() - 2], b"a"].concat(),
        false => b.to_vec(),
    }
}

static UUID: LazyLock<Regex> = LazyLock::new(|| Regex::new("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$").expect("a valid regex"));
static BASE64: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$").expect("a valid regex"));
static TIME: LazyLock<Regex> = LazyLock::new(|| Regex::new("^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$").expect("a valid regex"));

/// A `YYYY-MM-DD` calendar date, as Go's time.Parse("2006-01-02") takes it.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r.clone()].iter().all(u8::is_ascii_digit).then(|| s[r].parse::<u32>().ok()).flatten();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    match (digits(0..4), digits(5..7), digits(8..10)) {
        (Some(y), Some(m), Some(d)) => i32::try_from(y).is_ok_and(|y| chrono::NaiveDate::from_ymd_opt(y, m, d).is_some()),
        _ => false,
    }
}

/// kube-openapi's IsDateTime: a date, `t`, then a time whose fields are in range (what follows
/// a second `t` is not looked at).
fn is_datetime(s: &str) -> bool {
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if s.len() < 4 || parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    TIME.captures(parts[1]).is_some_and(|m| &m[1] <= "23" && &m[2] <= "59" && &m[3] <= "59")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::testing::t;

    fn errors(format: &str, s: &str) -> Vec<String> {
        (named(format).unwrap().validate)(s)
    }

    #[test]
    fn formats_validate_as_kubernetes_does() {
        t("!format.dns1123Label().validate('my-label-name').hasValue() && format.dns1123Label().validate('My_Name').hasValue()");
        t("!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue() && !format.dns1035Label().validate('my-label-name').hasValue()");
        t("!format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue() && !format.labelValue().validate('').hasValue()");
        t("!format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue() && !format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()");
        t("!format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue() && !format.uri().validate('http://example.com').hasValue()");
        t("!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue() && !format.byte().validate('aGVsbG8=').hasValue()");
        t("!format.date().validate('2021-01-01').hasValue() && !format.datetime().validate('2021-01-01T00:00:00Z').hasValue()");
        t("format.named('dns1123Label').hasValue() && format.named('dns1123Label').value() == format.dns1123Label() && !format.named('nope').hasValue()");
        t("format.named('labelValue').value().validate('-x').value().size() == 1 && type(format.uri()) == kubernetes.NamedFormat");
        t("format.dns1123Label().validate('a.b').value() == ['must not contain dots']");
        t("format.uuid().validate('x').value() == ['does not match the UUID format'] && format.byte().validate('abc').value() == ['invalid base64']");
        t("format.date().validate('2021-02-30').value() == ['invalid date'] && format.datetime().validate('2021-01-01T24:00:00Z').value() == ['invalid datetime']");
        t("format.uri().validate('foo').value() == ['parse \"foo\": invalid URI for request']");
    }

    #[test]
    fn messages_are_kubernetes_ones() {
        assert_eq!(errors("dns1123Label", "My_Name"), ["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]);
        assert_eq!(errors("dns1123Label", &"a".repeat(64)), ["must be no more than 63 characters"]);
        assert_eq!(errors("dns1123Subdomain", "-a"), ["a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]);
        assert_eq!(errors("dns1035Label", "1a"), ["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]);
        assert_eq!(errors("qualifiedName", "/x").len(), 1);
        assert_eq!(errors("qualifiedName", "/x")[0], "prefix part must be non-empty");
        assert_eq!(errors("qualifiedName", "a.com/"), ["name part must be non-empty", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]);
        assert!(errors("qualifiedName", "a/b/c")[0].starts_with("a qualified name must consist of"));
        assert!(errors("qualifiedName", "a/b/c")[0].ends_with("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
        assert!(errors("qualifiedName", "A_B/x")[0].starts_with("prefix part a lowercase RFC 1123 subdomain"));
        assert_eq!(errors("labelValue", "-x"), ["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]);
        assert!(errors("dns1123LabelPrefix", "ab-").is_empty() && !errors("dns1123LabelPrefix", "-").is_empty());
        // The last two bytes go, whatever they are part of.
        assert!(!errors("dns1123LabelPrefix", "é-").is_empty());
        assert!(errors("uuid", "123E4567E89B12D3A456426614174000").is_empty());
        assert!(errors("datetime", "2021-01-01T10:00:00.5+01:00").is_empty() && !errors("datetime", "2021-01-01").is_empty());
        assert!(errors("date", "0000-02-29").is_empty() && !errors("date", "2021-1-01").is_empty());
    }
}
