//! Static tokens (`--token-auth-file`): a CSV file, one token per line as
//! `token,user,uid[,"group1,group2"]`. Read once at start; a malformed file stops the server
//! with the line at fault.

use std::collections::HashMap;

use super::{Authenticated, TokenAuthenticator};
use crate::UserInfo;

pub struct TokenFile {
    users: HashMap<String, UserInfo>,
}

impl TokenFile {
    pub fn load(path: &std::path::Path) -> Result<TokenFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("token file '{}': {e}", path.display()))?;
        TokenFile::parse(&text).map_err(|e| format!("token file '{}': {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<TokenFile, String> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let line = line.trim_start_matches('\u{feff}');
            if line.trim().is_empty() {
                continue;
            }
            let fields = csv_fields(line).map_err(|e| format!("line {n}: {e}"))?;
            if fields.len() < 3 {
                return Err(format!("line {n}: must have at least 3 columns (token, user name, user uid), found {}", fields.len()));
            }
            if fields[0].is_empty() {
                return Err(format!("line {n}: the token is empty"));
            }
            let groups: Vec<String> =
                fields.get(3).map(|g| g.split(',').map(str::trim).filter(|g| !g.is_empty()).map(String::from).collect()).unwrap_or_default();
            let mut user = UserInfo::authenticated(fields[1].clone(), groups);
            user.uid = fields[2].clone();
            if users.insert(fields[0].clone(), user).is_some() {
                tracing::warn!(line = n, "duplicate token in the token file; the later line wins");
            }
        }
        Ok(TokenFile { users })
    }
}

/// The fields of one CSV line: commas separate, double quotes enclose a field that may hold
/// commas, and `""` inside quotes is one quote.
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("a quoted field is not closed".into()),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(',') => {}
                Some(c) => return Err(format!("unexpected {c:?} after a quoted field")),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field.trim().to_string());
                        return Ok(fields);
                    }
                    Some(',') => break,
                    Some('"') => return Err("a quote inside an unquoted field".into()),
                    Some(c) => field.push(c),
                }
            }
        }
        fields.push(field.trim().to_string());
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for TokenFile {
    fn name(&self) -> &'static str {
        "token-file"
    }

    async fn authenticate(&self, token: &str, audiences: &[String]) -> Result<Option<Authenticated>, String> {
        Ok(self.users.get(token).map(|user| Authenticated { user: user.clone(), audiences: audiences.to_vec() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_kubernetes_token_files() {
        let file = TokenFile::parse("s3cret,alice,uid-1,\"dev,ops\"\n\nt2,bob,uid-2\n").unwrap();
        let alice = &file.users["s3cret"];
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice", "uid-1"));
        assert_eq!(alice.groups, ["dev", "ops", "system:authenticated"]);
        assert_eq!(file.users["t2"].groups, ["system:authenticated"]);
        assert_eq!(csv_fields(r#"a,"b ""q"", c",d"#).unwrap(), ["a", "b \"q\", c", "d"]);
    }

    #[test]
    fn malformed_files_name_the_line() {
        for (text, want) in [
            ("ok,a,1\nonly,two\n", "line 2: must have at least 3 columns"),
            ("t,a,1,\"open\n", "line 1: a quoted field is not closed"),
            (",a,1\n", "line 1: the token is empty"),
            ("t,a,1,\"g\"x\n", "line 1: unexpected 'x'"),
        ] {
            let err = TokenFile::parse(text).err().unwrap();
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(text in ".{0,200}") {
            let _ = TokenFile::parse(&text);
        }

        #[test]
        fn quoted_groups_survive(groups in prop::collection::vec("[a-z]{1,8}", 0..4)) {
            let line = format!("tok,user,uid,\"{}\"", groups.join(","));
            let file = TokenFile::parse(&line).unwrap();
            let mut want = groups.clone();
            want.push("system:authenticated".into());
            prop_assert_eq!(&file.users["tok"].groups, &want);
        }
    }
}
