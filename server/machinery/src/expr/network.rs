//! Kubernetes' CEL IP and CIDR libraries: `ip(s)`, `isIP(s)`, `ip.isCanonical(s)`, on an IP
//! `family()`, `isUnspecified()`, `isLoopback()`, `isLinkLocalMulticast()`,
//! `isLinkLocalUnicast()`, `isGlobalUnicast()`, and `string(ip)`; `cidr(s)`, `isCIDR(s)`, on a
//! CIDR `containsIP(ip or s)`, `containsCIDR(cidr or s)`, `ip()`, `masked()`, `prefixLength()`,
//! and `string(cidr)`. Addresses are parsed as Go's net/netip parses them, without zones or
//! IPv4-mapped IPv6 addresses, as Kubernetes wants them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::{Kind, Type, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};

use super::support::{error, opaque, quote, string, value, wrap};

const IP_NAME: &str = "net.IP";
const IP: Type = Type::simple_type(Kind::Opaque, IP_NAME);
const CIDR_NAME: &str = "net.CIDR";
const CIDR: Type = Type::simple_type(Kind::Opaque, CIDR_NAME);

/// Declares the libraries' functions.
pub fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(IP)?;
    env.add_type(CIDR)?;
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], |a| wrap(parse_ip(string(&a, 0)?).map_err(|e| error("ip", e))?))?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], |a| value(parse_ip(string(&a, 0)?).is_ok()))?;
    env.add_overload("ip.isCanonical", "ip_is_canonical", vec![STRING_TYPE], |a| {
        let s = string(&a, 0)?;
        value(parse_ip(s).map_err(|e| error("ip.isCanonical", e))?.0.to_string() == s)
    })?;
    env.add_overload("string", "ip_to_string", vec![IP], |a| value(ip(&a, 0)?.0.to_string()))?;
    env.add_member_overload("family", "ip_family", IP, vec![], |a| value(if ip(&a, 0)?.0.is_ipv4() { 4 } else { 6 }))?;
    env.add_member_overload("isUnspecified", "ip_is_unspecified", IP, vec![], |a| value(ip(&a, 0)?.0.is_unspecified()))?;
    env.add_member_overload("isLoopback", "ip_is_loopback", IP, vec![], |a| value(ip(&a, 0)?.0.is_loopback()))?;
    env.add_member_overload("isLinkLocalMulticast", "ip_is_link_local_multicast", IP, vec![], |a| value(ip(&a, 0)?.is_link_local_multicast()))?;
    env.add_member_overload("isLinkLocalUnicast", "ip_is_link_local_unicast", IP, vec![], |a| value(ip(&a, 0)?.is_link_local_unicast()))?;
    env.add_member_overload("isGlobalUnicast", "ip_is_global_unicast", IP, vec![], |a| value(ip(&a, 0)?.is_global_unicast()))?;

    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], |a| wrap(parse_cidr(string(&a, 0)?).map_err(|e| error("cidr", e))?))?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], |a| value(parse_cidr(string(&a, 0)?).is_ok()))?;
    env.add_overload("string", "cidr_to_string", vec![CIDR], |a| value(cidr(&a, 0)?.to_string()))?;
    env.add_member_overload("containsIP", "cidr_contains_ip_string", CIDR, vec![STRING_TYPE], |a| {
        // Kubernetes reports an address it cannot parse here as a missing overload.
        let ip = parse_ip(string(&a, 1)?).map_err(|_| error("containsIP", "no such overload"))?;
        value(cidr(&a, 0)?.contains(ip.0))
    })?;
    env.add_member_overload("containsIP", "cidr_contains_ip_ip", CIDR, vec![IP], |a| value(cidr(&a, 0)?.contains(ip(&a, 1)?.0)))?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr_string", CIDR, vec![STRING_TYPE], |a| {
        let other = parse_cidr(string(&a, 1)?).map_err(|e| error("containsCIDR", e))?;
        value(cidr(&a, 0)?.contains_cidr(&other))
    })?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr", CIDR, vec![CIDR], |a| value(cidr(&a, 0)?.contains_cidr(&cidr(&a, 1)?)))?;
    env.add_member_overload("ip", "cidr_ip", CIDR, vec![], |a| wrap(Ip(cidr(&a, 0)?.addr)))?;
    env.add_member_overload("prefixLength", "cidr_prefix_length", CIDR, vec![], |a| value(i64::from(cidr(&a, 0)?.bits)))?;
    env.add_member_overload("masked", "cidr_masked", CIDR, vec![], |a| wrap(cidr(&a, 0)?.masked()))?;
    Ok(())
}

fn ip(args: &[CowVal<'_, '_>], i: usize) -> Result<Ip, ExecutionError> {
    opaque(args, i)
}

fn cidr(args: &[CowVal<'_, '_>], i: usize) -> Result<Cidr, ExecutionError> {
    opaque(args, i)
}

/// An IP address, written as netip writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ip(IpAddr);

impl cel::objects::Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP_NAME
    }
}

/// An address and a prefix length (the address's other bits kept, as netip.Prefix keeps them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl cel::objects::Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR_NAME
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// An address's bits, IPv4 ones in the low 32.
fn bits_of(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

impl Ip {
    fn first_u16(&self) -> Option<u16> {
        match self.0 {
            IpAddr::V6(a) => Some(a.segments()[0]),
            IpAddr::V4(_) => None,
        }
    }

    fn is_link_local_multicast(&self) -> bool {
        match self.0 {
            IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
            IpAddr::V6(_) => self.first_u16().is_some_and(|s| s & 0xff0f == 0xff02),
        }
    }

    fn is_link_local_unicast(&self) -> bool {
        match self.0 {
            IpAddr::V4(a) => a.octets()[..2] == [169, 254],
            IpAddr::V6(_) => self.first_u16().is_some_and(|s| s & 0xffc0 == 0xfe80),
        }
    }

    /// netip's IsGlobalUnicast: private and unique local addresses are global too.
    fn is_global_unicast(&self) -> bool {
        let broadcast = self.0 == IpAddr::V4(Ipv4Addr::BROADCAST);
        !broadcast && !self.0.is_unspecified() && !self.0.is_loopback() && !self.0.is_multicast() && !self.is_link_local_unicast()
    }
}

impl Cidr {
    fn max_bits(addr: IpAddr) -> u8 {
        if addr.is_ipv4() { 32 } else { 128 }
    }

    /// The address's first `bits` bits.
    fn network(addr: IpAddr, bits: u8) -> u128 {
        let width = u32::from(Cidr::max_bits(addr) - bits.min(Cidr::max_bits(addr)));
        bits_of(addr).checked_shr(width).unwrap_or(0)
    }

    fn contains(&self, ip: IpAddr) -> bool {
        self.addr.is_ipv4() == ip.is_ipv4() && Cidr::network(self.addr, self.bits) == Cidr::network(ip, self.bits)
    }

    /// netip's Overlaps, and no shorter prefix than this one's.
    fn contains_cidr(&self, other: &Cidr) -> bool {
        let bits = self.bits.min(other.bits);
        let overlaps = self == other || (self.addr.is_ipv4() == other.addr.is_ipv4() && Cidr::network(self.addr, bits) == Cidr::network(other.addr, bits));
        overlaps && self.bits <= other.bits
    }

    fn masked(&self) -> Cidr {
        let width = u32::from(Cidr::max_bits(self.addr) - self.bits);
        let network = Cidr::network(self.addr, self.bits).checked_shl(width).unwrap_or(0);
        let addr = match self.addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(network as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(network)),
        };
        Cidr { addr, bits: self.bits }
    }
}

/// Kubernetes' ip(): netip.ParseAddr, without zones or IPv4-mapped IPv6 addresses.
fn parse_ip(s: &str) -> Result<Ip, String> {
    let (addr, zone) = parse_addr(s).map_err(|e| format!("IP Address {} parse error during conversion from string: {e}", quote(s)))?;
    if !zone.is_empty() {
        return Err(format!("IP address {} with zone value is not allowed", quote(s)));
    }
    if is_4in6(addr) {
        return Err(format!("IPv4-mapped IPv6 address {} is not allowed", quote(s)));
    }
    Ok(Ip(addr))
}

fn is_4in6(addr: IpAddr) -> bool {
    matches!(addr, IpAddr::V6(a) if a.to_ipv4_mapped().is_some())
}

/// Kubernetes' cidr(): netip.ParsePrefix, without IPv4-mapped IPv6 addresses.
fn parse_cidr(s: &str) -> Result<Cidr, String> {
    const CONTEXT: &str = "network address parse error during conversion from string";
    let cidr = parse_prefix(s).map_err(|e| format!("{CONTEXT}: {CONTEXT}: {e}"))?;
    if is_4in6(cidr.addr) {
        return Err(format!("{CONTEXT}: IPv4-mapped IPv6 address {} is not allowed", quote(s)));
    }
    Ok(cidr)
}

/// netip.ParsePrefix.
fn parse_prefix(s: &str) -> Result<Cidr, String> {
    let error = |msg: String| format!("netip.ParsePrefix({}): {msg}", quote(s));
    let slash = s.rfind('/').ok_or_else(|| error("no '/'".into()))?;
    let (addr, zone) = parse_addr(&s[..slash]).map_err(error)?;
    if !zone.is_empty() {
        return Err(error("IPv6 zones cannot be present in a prefix".into()));
    }
    let bits = &s[slash + 1..];
    let bad_bits = || error(format!("bad bits after slash: {}", quote(bits)));
    if bits.len() > 1 && !(b'1'..=b'9').contains(&bits.as_bytes()[0]) {
        return Err(bad_bits());
    }
    let bits: i64 = bits.parse().map_err(|_| bad_bits())?;
    let bits = u8::try_from(bits).ok().filter(|b| *b <= Cidr::max_bits(addr)).ok_or_else(|| error("prefix length out of range".into()))?;
    Ok(Cidr { addr, bits })
}

/// netip.ParseAddr: the address and its zone.
fn parse_addr(s: &str) -> Result<(IpAddr, &str), String> {
    match s.bytes().find(|b| matches!(b, b'.' | b':' | b'%')) {
        Some(b'.') => Ok((IpAddr::V4(Ipv4Addr::from(ipv4_fields(s, s)?)), "")),
        Some(b':') => parse_ipv6(s),
        Some(_) => Err(addr_error(s, "missing IPv6 address", "")),
        None => Err(addr_error(s, "unable to parse IP", "")),
    }
}

fn addr_error(input: &str, msg: &str, at: &str) -> String {
    match at {
        "" => format!("ParseAddr({}): {msg}", quote(input)),
        at => format!("ParseAddr({}): {msg} (at {})", quote(input), quote(at)),
    }
}

/// The four fields of the dotted IPv4 address `s`, part of `input`.
fn ipv4_fields(input: &str, s: &str) -> Result<[u8; 4], String> {
    let b = s.as_bytes();
    let (mut fields, mut pos, mut val, mut digits) = ([0u8; 4], 0, 0u32, 0);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                if digits == 1 && val == 0 {
                    return Err(addr_error(input, "IPv4 field has octet with leading zero", ""));
                }
                val = val * 10 + u32::from(c - b'0');
                digits += 1;
                if val > 255 {
                    return Err(addr_error(input, "IPv4 field has value >255", ""));
                }
            }
            b'.' => {
                if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                    return Err(addr_error(input, "IPv4 field must have at least one digit", &s[i..]));
                }
                if pos == 3 {
                    return Err(addr_error(input, "IPv4 address too long", ""));
                }
                fields[pos] = val as u8;
                (pos, val, digits) = (pos + 1, 0, 0);
            }
            _ => return Err(addr_error(input, "unexpected character", &s[i..])),
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", ""));
    }
    fields[3] = val as u8;
    Ok(fields)
}

fn parse_ipv6(input: &str) -> Result<(IpAddr, &str), String> {
    let (mut s, zone) = input.split_once('%').unwrap_or((input, ""));
    if input.contains('%') && zone.is_empty() {
        return Err(addr_error(input, "zone must be a non-empty string", ""));
    }
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if let Some(rest) = s.strip_prefix("::") {
        ellipsis = Some(0);
        s = rest;
        if s.is_empty() {
            return Ok((IpAddr::V6(Ipv6Addr::UNSPECIFIED), zone));
        }
    }
    let mut i = 0;
    while i < 16 {
        let b = s.as_bytes();
        let (mut off, mut acc) = (0, 0u32);
        while let Some(d) = b.get(off).and_then(|c| (*c as char).to_digit(16)) {
            acc = acc << 4 | d;
            if off > 3 {
                return Err(addr_error(input, "each colon-separated field must have at most 4 hex digits", s));
            }
            off += 1;
        }
        if off == 0 {
            return Err(addr_error(input, "each colon-separated field must have at least one digit", s));
        }
        if b.get(off) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                return Err(addr_error(input, "embedded IPv4 address must replace the final 2 fields of the address", s));
            }
            if i + 4 > 16 {
                return Err(addr_error(input, "too many hex fields to fit an embedded IPv4 at the end of the address", s));
            }
            ip[i..i + 4].copy_from_slice(&ipv4_fields(input, s)?);
            (s, i) = ("", i + 4);
            break;
        }
        ip[i..i + 2].copy_from_slice(&(acc as u16).to_be_bytes());
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(addr_error(input, "unexpected character, want colon", s));
        }
        if s.len() == 1 {
            return Err(addr_error(input, "colon must be followed by more characters", s));
        }
        s = &s[1..];
        if let Some(rest) = s.strip_prefix(':') {
            if ellipsis.is_some() {
                return Err(addr_error(input, "multiple :: in address", s));
            }
            (ellipsis, s) = (Some(i), rest);
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(addr_error(input, "trailing garbage after address", s));
    }
    match ellipsis {
        None if i < 16 => return Err(addr_error(input, "address string too short", "")),
        Some(_) if i == 16 => return Err(addr_error(input, "the :: must expand to at least one field of zeros", "")),
        Some(at) => {
            let n = 16 - i;
            ip.copy_within(at..i, at + n);
            ip[at..at + n].fill(0);
        }
        None => {}
    }
    Ok((IpAddr::V6(Ipv6Addr::from(ip)), zone))
}

#[cfg(test)]
mod tests {
    use crate::expr::testing::{eval, t};

    #[test]
    fn ips_as_kubernetes_parses_them() {
        t("isIP('127.0.0.1') && isIP('::1') && isIP('2001:db8::1.2.3.4') && !isIP('127.0.0.256') && !isIP(':::1')");
        t("!isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0') && !isIP('01.2.3.4') && !isIP('1.2.3') && !isIP('00000::1')");
        t("ip('127.0.0.1').family() == 4 && ip('::1').family() == 6");
        t("ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd') && !ip.isCanonical('2001:DB8::ABCD') && !ip.isCanonical('2001:db8::0:0:0:abcd')");
        t("string(ip('2001:0db8:0:0:1:0:0:1')) == '2001:db8::1:0:0:1' && string(ip('::1.2.3.4')) == '::102:304' && string(ip('1:0::')) == '1::'");
        t("ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified() && !ip('::1').isUnspecified()");
        t("ip('127.0.0.1').isLoopback() && ip('::1').isLoopback() && !ip('192.168.0.1').isLoopback() && !ip('2001:db8::abcd').isLoopback()");
        t("ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()");
        t("ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()");
        t("ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast() && ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()");
        t("ip('::1') == ip('0:0::1') && ip('1.2.3.4') != ip('1.2.3.5') && type(ip('::1')) == net.IP");
    }

    #[test]
    fn cidrs_as_kubernetes_parses_them() {
        t("isCIDR('192.168.0.0/16') && isCIDR('::1/128') && isCIDR('192.168.0.1/16') && !isCIDR('192.168.0.0/33') && !isCIDR('::1/129')");
        t("!isCIDR('192.168.0.0') && !isCIDR('::ffff:1.2.3.4/24') && !isCIDR('1.2.3.4/08') && !isCIDR('fe80::%eth0/64')");
        t("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1')) && !cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))");
        t("cidr('192.168.0.0/24').containsIP('192.168.0.1') && !cidr('192.168.0.0/24').containsIP('192.168.1.1') && !cidr('0.0.0.0/0').containsIP('::1')");
        t("cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24')) && !cidr('192.168.1.0/24').containsCIDR(cidr('192.168.2.0/24'))");
        t("cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24') && !cidr('192.168.10.0/24').containsCIDR('192.168.0.0/16') && cidr('::/0').containsCIDR('2001:db8::/32')");
        t("cidr('192.168.0.1/24').ip() == ip('192.168.0.1') && cidr('::1/128').ip().family() == 6");
        t("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24') && cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()");
        t("cidr('192.168.0.0/16').prefixLength() == 16 && cidr('::1/128').prefixLength() == 128 && string(cidr('2001:DB8::/32')) == '2001:db8::/32'");
        t("cidr('10.0.0.0/8').masked() == cidr('10.0.0.0/8') && string(cidr('10.1.2.3/0').masked()) == '0.0.0.0/0'");
    }

    #[test]
    fn errors_as_kubernetes_words_them() {
        let err = |src: &str| eval(src).unwrap_err();
        assert!(err("ip('127.0.0.256')").ends_with("IP Address \"127.0.0.256\" parse error during conversion from string: ParseAddr(\"127.0.0.256\"): IPv4 field has value >255"));
        assert!(err("ip(':::1')").ends_with("ParseAddr(\":::1\"): each colon-separated field must have at least one digit (at \":1\")"), "{}", err("ip(':::1')"));
        assert!(err("ip('::ffff:1.2.3.4')").ends_with("IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"));
        assert!(err("ip('fe80::1%eth0')").ends_with("IP address \"fe80::1%eth0\" with zone value is not allowed"));
        assert!(err("ip('1.2.3.x')").ends_with("ParseAddr(\"1.2.3.x\"): unexpected character (at \"x\")"));
        assert!(err("ip('::1.2.3.x')").ends_with("ParseAddr(\"::1.2.3.x\"): unexpected character (at \"x\")"));
        assert!(err("ip('foo')").ends_with("ParseAddr(\"foo\"): unable to parse IP"));
        assert!(err("cidr('192.168.0.0/33')").ends_with(
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0/33\"): prefix length out of range"
        ));
        assert!(err("cidr('1.2.3.4')").ends_with("netip.ParsePrefix(\"1.2.3.4\"): no '/'"));
        assert!(err("cidr('1.2.3.4/x')").ends_with("netip.ParsePrefix(\"1.2.3.4/x\"): bad bits after slash: \"x\""));
        assert!(err("cidr('1.2.3/8')").ends_with("netip.ParsePrefix(\"1.2.3/8\"): ParseAddr(\"1.2.3\"): IPv4 address too short"));
        assert!(err("cidr('::ffff:1.2.3.4/120')").ends_with("cidr': network address parse error during conversion from string: IPv4-mapped IPv6 address \"::ffff:1.2.3.4/120\" is not allowed"));
        assert!(err("cidr('10.0.0.0/8').containsIP('bad')").ends_with("no such overload"));
        assert!(err("cidr('10.0.0.0/8').containsCIDR('bad')").ends_with("netip.ParsePrefix(\"bad\"): no '/'"));
    }
}
