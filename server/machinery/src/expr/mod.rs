//! CEL expressions over JSON objects, as Kubernetes evaluates them in admission policies, CRD
//! validation rules and authorization match conditions: compile once, bind named JSON values,
//! evaluate, with the libraries Kubernetes adds to the standard one.

pub mod admission;
pub mod amount;
pub mod check;
pub mod format;
#[cfg(test)]
mod fuzz;
pub mod issues;
pub mod lists;
pub mod network;
pub mod objects;
pub mod quantity;
pub mod regex;
pub mod result_type;
pub mod sets;
mod support;
pub use support::quote;
pub mod types;
pub mod urls;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use cel::{Context, DeclarationError, Env, ExecutionError, Program, Value};

/// Kubernetes' environment, built once.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(environment()));

/// A library: declares its types and functions.
type Library = fn(&mut Env) -> Result<(), DeclarationError>;

/// The standard library and the libraries Kubernetes adds to it for CRD validation rules and
/// admission policies: cel-go's strings and sets extensions, and Kubernetes' lists, regex, URLs,
/// quantity, IP and CIDR, format and JSON patch libraries.
fn environment() -> Env {
    let libraries: [Library; 9] = [
        cel::extensions::strings,
        sets::library,
        lists::library,
        regex::library,
        urls::library,
        quantity::library,
        network::library,
        format::library,
        objects::library,
    ];
    let mut env = Env::stdlib();
    for library in libraries {
        env.add_extension(library).expect("the libraries declare distinct functions");
    }
    env
}

/// Functions an expression gets beyond Kubernetes' environment, added at each evaluation (the
/// `authorizer` library of admission policies, whose answers depend on the request).
pub trait Extension {
    /// Adds the functions to `context`.
    fn install(&self, context: &mut Context<'_, '_>);
}

/// A compiled expression with its source.
pub struct Expression {
    pub source: String,
    program: Program,
    /// Kubernetes' environment, with the struct types the expression constructs if any.
    env: Arc<Env>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

impl Expression {
    /// Parses `source`, then evaluates it once against `sample` (every variable it may name, with
    /// every optional part present): naming anything else is an error, and so is a result of
    /// another type than `want` when one is given.
    pub fn compile(source: &str, sample: &[(&str, &serde_json::Value)], want: Option<&str>) -> Result<Expression, String> {
        Expression::compile_with(source, sample, want, None)
    }

    /// [`Expression::compile`] for expressions that may also call the functions of `extension`.
    pub fn compile_with(
        source: &str,
        sample: &[(&str, &serde_json::Value)],
        want: Option<&str>,
        extension: Option<&dyn Extension>,
    ) -> Result<Expression, String> {
        let expression = Expression::parse(source)?;
        match expression.eval_with(sample, extension) {
            // A null from the sample says nothing about the type (a variable whose value the
            // sample cannot know).
            Ok(v) if want.is_some_and(|w| type_name(&v) != w) && v != Value::Null => {
                Err(format!("compilation failed: must evaluate to {} but got {}", want.unwrap_or_default(), type_name(&v)))
            }
            Err(ExecutionError::UndeclaredReference(name)) => {
                let names: Vec<&str> = sample.iter().map(|(n, _)| *n).collect();
                Err(check_names(source, &names).unwrap_or_else(|| format!("compilation failed: undeclared reference to '{name}'")))
            }
            _ => Ok(expression),
        }
    }

    /// Parses `source`, leaving what it names to the caller to check.
    pub fn parse(source: &str) -> Result<Expression, String> {
        let program = Program::compile(source).map_err(|e| format!("compilation failed: {}", issues::syntax(source, &e)))?;
        let structs = objects::struct_names(source);
        let env = if structs.is_empty() { ENV.clone() } else { Arc::new(objects::env_with(&structs)?) };
        Ok(Expression { source: source.to_string(), program, env })
    }

    /// Evaluates with CEL values bound (optionals among them).
    pub fn eval_values(&self, vars: Vec<(&str, Value)>) -> Result<Value, ExecutionError> {
        self.run(vars, None)
    }

    /// Evaluates with `vars` bound.
    pub fn eval(&self, vars: &[(&str, &serde_json::Value)]) -> Result<Value, ExecutionError> {
        self.eval_with(vars, None)
    }

    /// Evaluates with `vars` bound and the functions of `extension`.
    pub fn eval_with(&self, vars: &[(&str, &serde_json::Value)], extension: Option<&dyn Extension>) -> Result<Value, ExecutionError> {
        self.run(vars.iter().map(|(name, value)| (*name, to_value(value))).collect(), extension)
    }

    fn run(&self, vars: Vec<(&str, Value)>, extension: Option<&dyn Extension>) -> Result<Value, ExecutionError> {
        let mut context = Context::with_env(self.env.clone());
        if let Some(e) = extension {
            e.install(&mut context);
        }
        for (name, value) in vars {
            context.add_variable_from_value(name, value);
        }
        self.program.execute(&context)
    }

    /// Evaluates to a bool; anything else is an error, worded as Kubernetes words it.
    pub fn eval_bool(&self, vars: &[(&str, &serde_json::Value)], extension: Option<&dyn Extension>) -> Result<bool, String> {
        match self.eval_with(vars, extension) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("expression '{}' resulted in {}, want bool", self.source, type_name(&other))),
            Err(e) => Err(format!("expression '{}' resulted in error: {}", self.source, message(&e))),
        }
    }

    /// Evaluates to a string or null (none).
    pub fn eval_optional_string(&self, vars: &[(&str, &serde_json::Value)], extension: Option<&dyn Extension>) -> Result<Option<String>, String> {
        match self.eval_with(vars, extension) {
            Ok(Value::String(s)) => Ok(Some(s.to_string())),
            Ok(Value::Null) => Ok(None),
            Ok(other) => Err(format!("expression '{}' resulted in {}, want string or null", self.source, type_name(&other))),
            Err(e) => Err(format!("expression '{}' resulted in error: {}", self.source, message(&e))),
        }
    }

    /// Evaluates to a string.
    pub fn eval_string(&self, vars: &[(&str, &serde_json::Value)], extension: Option<&dyn Extension>) -> Result<String, String> {
        match self.eval_with(vars, extension) {
            Ok(Value::String(s)) => Ok(s.to_string()),
            Ok(other) => Err(format!("expression '{}' resulted in {}, want string", self.source, type_name(&other))),
            Err(e) => Err(format!("expression '{}' resulted in error: {}", self.source, message(&e))),
        }
    }
}

/// A parse error of `source`, if any, worded as Kubernetes' compiler words one.
pub fn syntax_error(source: &str) -> Option<String> {
    Expression::parse(source).err()
}

/// What cel-go's checker reports for `source` with `names` declared `dyn`, worded as Kubernetes'
/// compiler words it: references to anything else (`undeclared reference to 'x' (in container
/// '')`) and operators applied to literals of types they do not take, each where it is written;
/// `None` when it reports nothing.
pub fn check_names(source: &str, names: &[&str]) -> Option<String> {
    let vars: Vec<(&str, types::Ty)> = names.iter().map(|n| (*n, types::Ty::Dyn)).collect();
    check::check(source, &vars).err().map(|issues| format!("compilation failed: {issues}"))
}

/// An evaluation error in Kubernetes' words: a function's own message, without the preamble
/// naming the function.
pub fn message(e: &ExecutionError) -> String {
    match e {
        ExecutionError::FunctionError { message, .. } => message.clone(),
        e => e.to_string(),
    }
}

/// CEL's name for a value's type.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Null => "null_type",
        _ => "object",
    }
}

/// A JSON value as CEL sees it.
pub fn to_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or_default()),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(a) => Value::List(Arc::new(a.iter().map(to_value).collect())),
        serde_json::Value::Object(o) => {
            let map: HashMap<String, Value> = o.iter().map(|(k, v)| (k.clone(), to_value(v))).collect();
            Value::from(map)
        }
    }
}

/// A CEL value as JSON (for variables other expressions read).
pub fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => (*b).into(),
        Value::Int(i) => (*i).into(),
        Value::UInt(u) => (*u).into(),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::String(s) => s.as_str().into(),
        Value::List(l) => l.iter().map(to_json).collect(),
        Value::Map(m) => m.map.iter().map(|(k, v)| (key_string(k), to_json(v))).collect::<serde_json::Map<_, _>>().into(),
        _ => serde_json::Value::Null,
    }
}

fn key_string(k: &cel::objects::Key) -> String {
    match k {
        cel::objects::Key::String(s) => s.to_string(),
        cel::objects::Key::Int(i) => i.to_string(),
        cel::objects::Key::Uint(u) => u.to_string(),
        cel::objects::Key::Bool(b) => b.to_string(),
    }
}

/// What the library tests evaluate with.
#[cfg(test)]
pub(crate) mod testing {
    use cel::Value;

    /// `src` evaluated with no variables; an error as its text.
    pub fn eval(src: &str) -> Result<Value, String> {
        super::Expression::parse(src).unwrap().eval(&[]).map_err(|e| e.to_string())
    }

    /// Asserts `src` is true.
    pub fn t(src: &str) {
        assert_eq!(eval(src), Ok(Value::Bool(true)), "{src}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compiles_checks_and_evaluates() {
        let object = json!({"spec": {"replicas": 3}, "metadata": {"name": "x"}});
        let sample = [("object", &object)];
        let e = Expression::compile("object.spec.replicas > 1", &sample, Some("bool")).unwrap();
        assert_eq!(e.eval_bool(&[("object", &json!({"spec": {"replicas": 1}}))], None), Ok(false));
        assert!(Expression::compile("object.spec.replicas", &sample, Some("bool")).unwrap_err().contains("must evaluate to bool"));
        assert_eq!(
            Expression::compile("other.x == 1", &sample, Some("bool")).unwrap_err(),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'other' (in container '')\n | other.x == 1\n | ^"
        );
        assert!(Expression::compile("object.spec.replicas >", &sample, None).unwrap_err().starts_with("compilation failed"));
        // A variable the sample has as null may hold a bool at run time.
        let variables = json!({"odd": null});
        assert!(Expression::compile("variables.odd", &[("variables", &variables)], Some("bool")).is_ok());
        let m = Expression::compile("'name: ' + object.metadata.name", &sample, Some("string")).unwrap();
        assert_eq!(m.eval_string(&sample, None).unwrap(), "name: x");
        assert_eq!(to_json(&to_value(&object)), object);
    }

    #[test]
    fn the_strings_library_is_cel_gos() {
        let eval = |src: &str| Expression::parse(src).unwrap().eval(&[]).map_err(|e| e.to_string());
        let checks = [
            "'hello'.charAt(1) == 'e' && 'hello'.charAt(5) == ''",
            "'hello'.indexOf('l') == 2 && 'hello'.indexOf('l', 3) == 3 && 'hello'.lastIndexOf('l') == 3",
            "'TacoCat'.lowerAscii() == 'tacocat' && 'TacoCat'.upperAscii() == 'TACOCAT' && '  x '.trim() == 'x'",
            "'a-b-c'.replace('-', '+') == 'a+b+c' && 'a-b-c'.replace('-', '+', 1) == 'a+b-c'",
            "'a,b,c'.split(',') == ['a', 'b', 'c'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']",
            "'hello'.substring(1) == 'ello' && 'hello'.substring(1, 3) == 'el' && ['a', 'b'].join('-') == 'a-b'",
            "strings.quote('a\"b') == '\"a\\\\\"b\"' && '%s is %d'.format(['x', 1]) == 'x is 1'",
        ];
        for check in checks {
            assert_eq!(eval(check), Ok(Value::Bool(true)), "{check}");
        }
        assert!(eval("'hello'.charAt(6)").unwrap_err().ends_with("index out of range: 6"));
    }

    #[test]
    fn evaluation_errors_are_worded_as_kubernetes_words_them() {
        let e = Expression::parse("quantity('1').asInteger() == 1 && quantity('1.5').asInteger() == 1").unwrap();
        let err = e.eval_bool(&[], None).unwrap_err();
        assert_eq!(err, "expression 'quantity('1').asInteger() == 1 && quantity('1.5').asInteger() == 1' resulted in error: cannot convert value to integer");
    }
}
