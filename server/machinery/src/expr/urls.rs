//! Kubernetes' CEL URL library: `url(s)`, `isURL(s)`, and on a URL `getScheme()`, `getHost()`,
//! `getHostname()`, `getPort()`, `getEscapedPath()` and `getQuery()`; URLs are parsed as Go's
//! net/url parses them (`ParseRequestURI` decides what is a URL), and its error messages.

use std::collections::HashMap;

use cel::common::types::{Kind, Type, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::support::{error, opaque, quote, string, value, wrap};

const URL_NAME: &str = "kubernetes.URL";
const URL: Type = Type::simple_type(Kind::Opaque, URL_NAME);

/// Declares the library's functions.
pub fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(URL)?;
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], |a| {
        let s = string(&a, 0)?;
        let url = parse_request_uri(s).and_then(|_| parse(s));
        wrap(url.map_err(|e| error("url", format!("URL parse error during conversion from string: {e}")))?)
    })?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], |a| value(parse_request_uri(string(&a, 0)?).is_ok()))?;
    env.add_member_overload("getScheme", "url_get_scheme", URL, vec![], |a| value(this(&a)?.scheme))?;
    env.add_member_overload("getHost", "url_get_host", URL, vec![], |a| value(text(&this(&a)?.host)))?;
    env.add_member_overload("getHostname", "url_get_hostname", URL, vec![], |a| value(text(split_host_port(&this(&a)?.host).0)))?;
    env.add_member_overload("getPort", "url_get_port", URL, vec![], |a| value(text(split_host_port(&this(&a)?.host).1)))?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", URL, vec![], |a| value(this(&a)?.escaped_path()))?;
    env.add_member_overload("getQuery", "url_get_query", URL, vec![], |a| value(this(&a)?.query()))?;
    Ok(())
}

fn this(args: &[CowVal<'_, '_>]) -> Result<Url, ExecutionError> {
    opaque(args, 0)
}

/// Go strings are bytes; CEL's are text.
fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A URL as Go's url.URL holds it (the parts unescaped, with the escaping they were written in
/// when that is not the default one).
#[derive(Clone, Debug, Default)]
pub struct Url {
    scheme: String,
    opaque: String,
    user: Option<(Vec<u8>, Option<Vec<u8>>)>,
    host: Vec<u8>,
    path: Vec<u8>,
    raw_path: String,
    omit_host: bool,
    force_query: bool,
    raw_query: String,
    fragment: Vec<u8>,
    raw_fragment: String,
}

/// URLs are equal when they write the same.
impl PartialEq for Url {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Url {}

impl cel::objects::Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        URL_NAME
    }
}

/// The part of a URL being escaped or unescaped.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

fn should_escape(c: u8, part: Part) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(part, Part::Host | Part::Zone) && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match part {
            Part::Path => c == b'?',
            Part::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Part::QueryComponent => true,
            Part::Fragment => false,
            Part::Host | Part::Zone => true,
        },
        b'!' | b'(' | b')' | b'*' if part == Part::Fragment => false,
        _ => true,
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Go's url.unescape: `%XX` decoded (and `+` a space in a query component).
fn unescape(s: &str, part: Part) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let (Some(hi), Some(lo)) = (b.get(i + 1).and_then(|c| hex(*c)), b.get(i + 2).and_then(|c| hex(*c))) else {
                    return Err(format!("invalid URL escape {}", quote(&b[i..(i + 3).min(b.len())])));
                };
                let escape = &b[i..i + 3];
                if part == Part::Host && hi < 8 && escape != b"%25" {
                    return Err(format!("invalid URL escape {}", quote(escape)));
                }
                let v = hi << 4 | lo;
                if part == Part::Zone && escape != b"%25" && v != b' ' && should_escape(v, Part::Host) {
                    return Err(format!("invalid URL escape {}", quote(escape)));
                }
                out.push(v);
                i += 3;
            }
            b'+' if part == Part::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if matches!(part, Part::Host | Part::Zone) && c < 0x80 && should_escape(c, part) {
                    return Err(format!("invalid character {} in host name", quote([c])));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

fn escape(s: &[u8], part: Part) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s {
        if c == b' ' && part == Part::QueryComponent {
            out.push('+');
        } else if should_escape(c, part) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's url.ParseRequestURI: an absolute URI or an absolute path, as an HTTP request has it.
pub fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse_url(raw, true).map_err(|e| format!("parse {}: {e}", quote(raw)))
}

/// Go's url.Parse.
fn parse(raw: &str) -> Result<Url, String> {
    let (u, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse_url(u, false).map_err(|e| format!("parse {}: {e}", quote(u)))?;
    if !fragment.is_empty() {
        url.fragment = unescape(fragment, Part::Fragment).map_err(|e| format!("parse {}: {e}", quote(raw)))?;
        if escape(&url.fragment, Part::Fragment) != fragment {
            url.raw_fragment = fragment.to_string();
        }
    }
    Ok(url)
}

fn parse_url(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = b"*".to_vec();
        return Ok(url);
    }
    let (scheme, mut rest) = scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        (rest, url.raw_query) = (r, q.to_string());
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_string();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        if rest.split('/').next().unwrap_or_default().contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, path) = authority.find('/').map_or((authority, ""), |i| authority.split_at(i));
        (url.user, url.host) = parse_authority(authority)?;
        rest = path;
    } else if !url.scheme.is_empty() && rest.starts_with('/') {
        url.omit_host = true;
    }
    url.path = unescape(rest, Part::Path)?;
    if escape(&url.path, Part::Path) != rest {
        url.raw_path = rest.to_string();
    }
    Ok(url)
}

/// A leading `scheme:` (letters, then letters, digits, `+`, `-` or `.`), and the rest.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            c if c.is_ascii_alphabetic() => {}
            c if (c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.')) && i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

type User = Option<(Vec<u8>, Option<Vec<u8>>)>;

fn parse_authority(authority: &str) -> Result<(User, Vec<u8>), String> {
    let Some(at) = authority.rfind('@') else { return Ok((None, parse_host(authority)?)) };
    let host = parse_host(&authority[at + 1..])?;
    let userinfo = &authority[..at];
    let valid = |c: char| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c);
    if !userinfo.chars().all(valid) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => (unescape(userinfo, Part::UserPassword)?, None),
        Some((name, password)) => (unescape(name, Part::UserPassword)?, Some(unescape(password, Part::UserPassword)?)),
    };
    Ok((Some(user), host))
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

fn parse_host(host: &str) -> Result<Vec<u8>, String> {
    let bad_port = |port: &str| format!("invalid port {} after host", quote(port));
    if host.starts_with('[') {
        let end = host.rfind(']').ok_or("missing ']' in host")?;
        if !valid_optional_port(&host[end + 1..]) {
            return Err(bad_port(&host[end + 1..]));
        }
        if let Some(zone) = host[..end].find("%25") {
            let mut out = unescape(&host[..zone], Part::Host)?;
            out.extend(unescape(&host[zone..end], Part::Zone)?);
            out.extend(unescape(&host[end..], Part::Host)?);
            return Ok(out);
        }
    } else if let Some(colon) = host.rfind(':') {
        if !valid_optional_port(&host[colon..]) {
            return Err(bad_port(&host[colon..]));
        }
    }
    unescape(host, Part::Host)
}

/// The host and port of `host:port` (brackets around an IPv6 address dropped).
fn split_host_port(host_port: &[u8]) -> (&[u8], &[u8]) {
    let (mut host, mut port) = (host_port, &[][..]);
    if let Some(colon) = host.iter().rposition(|b| *b == b':') {
        if host[colon + 1..].iter().all(u8::is_ascii_digit) {
            (host, port) = (&host[..colon], &host[colon + 1..]);
        }
    }
    if host.len() >= 2 && host.starts_with(b"[") && host.ends_with(b"]") {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

impl Url {
    /// Go's URL.EscapedPath: the path as written when that is a valid escaping of it.
    fn escaped_path(&self) -> String {
        let valid = |s: &str| s.bytes().all(|c| b"!$&'()*+,;=:@[]%".contains(&c) || !should_escape(c, Part::Path));
        if !self.raw_path.is_empty() && valid(&self.raw_path) && unescape(&self.raw_path, Part::Path).is_ok_and(|p| p == self.path) {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return "*".into();
        }
        escape(&self.path, Part::Path)
    }

    fn escaped_fragment(&self) -> String {
        let valid = |s: &str| s.bytes().all(|c| b"!$&'()*+,;=:@[]%".contains(&c) || !should_escape(c, Part::Fragment));
        if !self.raw_fragment.is_empty() && valid(&self.raw_fragment) && unescape(&self.raw_fragment, Part::Fragment).is_ok_and(|f| f == self.fragment) {
            return self.raw_fragment.clone();
        }
        escape(&self.fragment, Part::Fragment)
    }

    /// Go's URL.Query: the query's keys and their values, malformed pairs left out.
    fn query(&self) -> HashMap<String, Value> {
        let mut values: HashMap<String, Vec<String>> = HashMap::new();
        for pair in self.raw_query.split('&').filter(|p| !p.is_empty() && !p.contains(';')) {
            let (key, v) = pair.split_once('=').unwrap_or((pair, ""));
            if let (Ok(key), Ok(v)) = (unescape(key, Part::QueryComponent), unescape(v, Part::QueryComponent)) {
                values.entry(text(&key)).or_default().push(text(&v));
            }
        }
        values.into_iter().map(|(k, v)| (k, Value::from(v))).collect()
    }
}

/// Go's URL.String.
impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out = format!("{}:", self.scheme);
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            let authority = !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some();
            if authority && !(self.omit_host && self.host.is_empty() && self.user.is_none()) {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if let Some((name, password)) = &self.user {
                    out.push_str(&escape(name, Part::UserPassword));
                    if let Some(p) = password {
                        out.push(':');
                        out.push_str(&escape(p, Part::UserPassword));
                    }
                    out.push('@');
                }
                out.push_str(&escape(&self.host, Part::Host));
            }
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().unwrap_or_default().contains(':') {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&self.escaped_fragment());
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::testing::{eval, t};

    #[test]
    fn urls_as_kubernetes_parses_them() {
        t("isURL('https://user:pw@example.com:8080/a%20b/c?x=1&y=2&x=3#frag') && isURL('/absolute-path') && isURL('https://example.com')");
        // A scheme, then something opaque.
        t("isURL('example.com:80') && url('example.com:80').getScheme() == 'example.com' && url('example.com:80').getHost() == ''");
        t("!isURL('../relative-path') && !isURL('') && !isURL('http://a b.com/') && !isURL('http://[::1/')");
        t("url('https://example.com:80/').getScheme() == 'https' && url('HTTPS://example.com').getScheme() == 'https'");
        t("url('https://example.com:80/').getHost() == 'example.com:80' && url('https://example.com:80/').getHostname() == 'example.com'");
        t("url('https://example.com:80/').getPort() == '80' && url('https://example.com/').getPort() == ''");
        t("url('https://[::1]:80/').getHost() == '[::1]:80' && url('https://[::1]:80/').getHostname() == '::1'");
        t("url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'");
        t("url('https://example.com/a%2Fb').getEscapedPath() == '/a%2Fb' && url('/a/b').getEscapedPath() == '/a/b'");
        t("url('https://example.com/?k=a&k=b&j=x+y&bad=%zz&n').getQuery() == {'k': ['a', 'b'], 'j': ['x y'], 'n': ['']}");
        t("url('https://example.com').getQuery() == {}");
        t("url('https://example.com/a b') == url('https://example.com/a%20b') && url('http:/a') != url('http:///a')");
        t("type(url('/')) == kubernetes.URL");
    }

    #[test]
    fn errors_as_kubernetes_words_them() {
        let err = eval("url('../relative-path')").unwrap_err();
        assert!(err.ends_with("URL parse error during conversion from string: parse \"../relative-path\": invalid URI for request"), "{err}");
        assert_eq!(parse_request_uri("").unwrap_err(), "parse \"\": empty url");
        assert_eq!(parse_request_uri(":x").unwrap_err(), "parse \":x\": missing protocol scheme");
        assert_eq!(parse_request_uri("http://x:y/").unwrap_err(), "parse \"http://x:y/\": invalid port \":y\" after host");
        assert_eq!(parse_request_uri("http://a b/").unwrap_err(), "parse \"http://a b/\": invalid character \" \" in host name");
        assert_eq!(parse_request_uri("/a%zz").unwrap_err(), "parse \"/a%zz\": invalid URL escape \"%zz\"");
        assert_eq!(parse_request_uri("http://[::1/").unwrap_err(), "parse \"http://[::1/\": missing ']' in host");
        assert_eq!(parse_request_uri("http://a\tb").unwrap_err(), "parse \"http://a\\tb\": net/url: invalid control character in URL");
        assert_eq!(parse_request_uri("http://a^b@x/").unwrap_err(), "parse \"http://a^b@x/\": net/url: invalid userinfo");
    }
}
