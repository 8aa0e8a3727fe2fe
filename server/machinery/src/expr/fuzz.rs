//! Property tests of Kubernetes' CEL libraries over arbitrary input: every parser that reads a
//! value from an object (quantities, URLs, IP addresses and CIDRs, named formats, regular
//! expressions) answers a value or an error, never panics, and finishes in bounded time.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::json;

use super::Expression;

/// Expressions that hand `s` (and `t`) to each library's parser.
const EXPRESSIONS: &[&str] = &[
    "isQuantity(s) ? quantity(s).add(quantity(s)).asApproximateFloat() : 0.0",
    "isQuantity(s) && isQuantity(t) ? quantity(s).compareTo(quantity(t)) : 0",
    "isQuantity(s) && quantity(s).isInteger() ? quantity(s).asInteger() : 0",
    "sign(quantity(s).sub(1))",
    "isURL(s) ? [url(s).getScheme(), url(s).getHost(), url(s).getHostname(), url(s).getPort(), url(s).getEscapedPath()] : []",
    "isURL(s) ? url(s).getQuery() : {}",
    "isIP(s) ? [string(ip(s)), ip(s).family(), ip(s).isLoopback(), ip.isCanonical(s)] : []",
    "isCIDR(s) ? [string(cidr(s).masked()), cidr(s).prefixLength(), cidr(s).containsIP(t), cidr(s).containsCIDR(t)] : []",
    "format.dns1123Subdomain().validate(s)",
    "format.named(t).hasValue() ? format.named(t).value().validate(s) : optional.none()",
    "s.matches(t) || t.find(s) != '' || size(s.findAll(t, 3)) > 0",
    "s.lowerAscii().split(t).join('-').replace('a', t).substring(0)",
];

/// Text drawn from the characters these formats are made of, and anything else.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9a-fA-F.:/%@?#=&+\\-\\[\\]eEikKMGTPnum ]{0,40}",
        "(https?|ftp)://[a-z0-9.:\\[\\]@%]{0,20}(/[a-z%0-9]{0,8}){0,3}(\\?[a-z=&%]{0,12})?",
        "[0-9]{1,4}(\\.[0-9]{1,4}){0,4}(/[0-9]{1,3})?",
        "[0-9]{0,30}(\\.[0-9]{0,30})?([eE][+-]?[0-9]{1,6}|[KMGTPE]i|[numkMGTPE])?",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn library_parsers_never_panic_and_are_bounded(s in text(), t in text()) {
        for source in EXPRESSIONS {
            let expression = Expression::parse(source).expect("the expressions parse");
            let started = Instant::now();
            let _ = expression.eval(&[("s", &json!(s)), ("t", &json!(t))]);
            prop_assert!(started.elapsed() < Duration::from_secs(1), "{source} took {:?} on {s:?}, {t:?}", started.elapsed());
        }
    }
}

/// The expressions reach the parsers: on well-formed input each evaluates without error.
#[test]
fn every_expression_runs_on_good_input() {
    let cases = [("1Gi", "500Mi"), ("https://a.example:8443/p?q=1", "10.0.0.1"), ("10.0.0.0/8", "10.1.2.3"), ("web", "dns1123Label")];
    for source in EXPRESSIONS {
        let expression = Expression::parse(source).unwrap();
        let ok = cases.iter().any(|(s, t)| expression.eval(&[("s", &json!(s)), ("t", &json!(t))]).is_ok());
        assert!(ok, "{source} fails on every good input");
    }
}
