//! The flags reference (`docs/flags.md`), rendered from the flag definitions in [`crate::cli`]
//! so that it cannot drift from them: `apiserver flags-reference` prints it, and a test compares
//! the committed file with what the binary prints.

use clap::{Arg, Command, CommandFactory};

use crate::cli::Args;

/// The whole reference, in Markdown.
pub fn render() -> String {
    let command = Args::command();
    let mut out = String::from(
        "# Flags\n\n\
         Every flag and command of `apiserver`, as `apiserver --help` gives them. Flags are named as \
         kube-apiserver names them where one exists. This file is generated: \
         `apiserver flags-reference > docs/flags.md` writes it, and a test fails when it differs.\n",
    );
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in command.get_arguments() {
        if !headings.contains(&arg.get_help_heading()) {
            headings.push(arg.get_help_heading());
        }
    }
    for heading in headings {
        out.push_str(&format!("\n## {}\n\n", heading.unwrap_or("Running a node")));
        table(&command, heading, &mut out);
    }
    for sub in visible_subcommands(&command) {
        section(sub, &format!("apiserver {}", sub.get_name()), &mut out);
    }
    out
}

fn visible_subcommands(command: &Command) -> impl Iterator<Item = &Command> {
    command.get_subcommands().filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// A command's heading, its description, its arguments and its own subcommands.
fn section(command: &Command, path: &str, out: &mut String) {
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(&format!("## `{path}`\n\n"));
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        out.push_str(&format!("{}\n\n", one_line(&about.to_string())));
    }
    let positionals: Vec<&Arg> = command.get_positionals().collect();
    if !positionals.is_empty() {
        let names: Vec<String> = positionals.iter().map(|a| format!("`{}`", a.get_id().as_str().to_uppercase())).collect();
        out.push_str(&format!("Arguments: {}.\n\n", names.join(", ")));
    }
    if command.get_arguments().any(|a| a.get_long().is_some() && !a.is_global_set() && !is_builtin(a)) {
        table(command, None, out);
    }
    for sub in visible_subcommands(command) {
        section(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// `help` and `version`, which clap adds to every command.
fn is_builtin(arg: &Arg) -> bool {
    matches!(arg.get_id().as_str(), "help" | "version")
}

/// One row per flag under `heading`: its name and value, its default, what it does.
fn table(command: &Command, heading: Option<&str>, out: &mut String) {
    out.push_str("| flag | default | meaning |\n|---|---|---|\n");
    let shown = |a: &&Arg| a.get_long().is_some() && !is_builtin(a) && !a.is_hide_set() && a.get_help_heading() == heading;
    for arg in command.get_arguments().filter(shown) {
        if arg.is_global_set() && command.get_name() != "apiserver" {
            continue;
        }
        let long = arg.get_long().unwrap_or_default();
        let takes_value = arg.get_action().takes_values();
        let name = if takes_value { format!("`--{long} {}`", value_name(arg)) } else { format!("`--{long}`") };
        let defaults: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
        let default = match defaults.as_slice() {
            [] => String::new(),
            [one] if one.is_empty() => "empty".to_string(),
            many => format!("`{}`", many.join(",")),
        };
        let mut meaning = arg.get_long_help().or(arg.get_help()).map(|h| one_line(&h.to_string())).unwrap_or_default();
        let possible: Vec<String> = arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| format!("`{}`", v.get_name())).collect();
        if !possible.is_empty() && !matches!(possible.as_slice(), [t, f] if t == "`true`" && f == "`false`") {
            meaning.push_str(&format!(" One of {}.", possible.join(", ")));
        }
        if arg.get_num_args().is_some_and(|n| n.max_values() > 1) || matches!(arg.get_action(), clap::ArgAction::Append) {
            meaning.push_str(" Repeatable.");
        }
        out.push_str(&format!("| {name} | {default} | {} |\n", escape(&meaning)));
    }
}

fn value_name(arg: &Arg) -> String {
    arg.get_value_names().and_then(|names| names.first()).map(|n| n.to_string()).unwrap_or_else(|| arg.get_id().as_str().to_uppercase())
}

/// Help text on one line, with its final full stop (clap's help drops it).
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.is_empty() || joined.ends_with('.') {
        joined
    } else {
        format!("{joined}.")
    }
}

/// A table cell: a `|` would end it.
fn escape(text: &str) -> String {
    text.replace('|', "\\|")
}
