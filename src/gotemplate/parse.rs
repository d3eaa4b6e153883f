//! The parser: an action's tokens into a pipeline of commands, with the fields and
//! functions it uses checked against what the *template* plugin gives.

use super::ast::{Command, Func, Operand, Pipeline};
use super::lex::Token;

/// The data's fields a template may name (`.Meta` is a method).
pub(super) const FIELDS: &[&str] = &[
    "Zone", "Name", "Regex", "Match", "Group", "Class", "Type", "Remote", "Question",
];

/// The fields of `.Question`.
pub(super) const QUESTION_FIELDS: &[&str] = &["Name", "Qtype", "Qclass"];

pub(super) struct Parser {
    pub(super) tokens: Vec<Token>,
    pub(super) at: usize,
}

impl Parser {
    pub(super) fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    pub(super) fn pipeline(&mut self) -> Result<Pipeline, String> {
        let mut commands = vec![self.command()?];
        while self.peek() == Some(&Token::Pipe) {
            self.at += 1;
            let command = self.command()?;
            if matches!(command, Command::Operand(Operand::Str(_) | Operand::Int(_))) {
                return Err("non executable command in pipeline stage 2".to_owned());
            }
            commands.push(command);
        }
        Ok(Pipeline(commands))
    }

    pub(super) fn command(&mut self) -> Result<Command, String> {
        let Some(first) = self.peek().cloned() else {
            return Err("missing value for command".to_owned());
        };
        match first {
            Token::Ident(name) => {
                self.at += 1;
                match name.as_str() {
                    "true" => return Ok(Command::Operand(Operand::Bool(true))),
                    "false" => return Ok(Command::Operand(Operand::Bool(false))),
                    "if" | "range" | "with" | "else" | "end" | "define" | "template" | "block"
                    | "break" | "continue" => {
                        return Err(format!(
                            "{{{{{name}}}}} is not supported (clusterdns templates have no \
                             control structures)"
                        ));
                    }
                    _ => {}
                }
                let Some(func) = Func::named(&name) else {
                    return Err(format!("function {name:?} not defined"));
                };
                let args = self.operands()?;
                Ok(Command::Call(func, args))
            }
            Token::Field(path) if path.first().is_some_and(|f| f == "Meta") => {
                self.at += 1;
                if path.len() > 1 {
                    return Err("can't evaluate field of .Meta".to_owned());
                }
                Ok(Command::Meta(self.operands()?))
            }
            _ => {
                let operand = self.operand()?;
                if self.at < self.tokens.len() && !matches!(self.peek(), Some(Token::Pipe)) {
                    if matches!(self.peek(), Some(Token::Close)) {
                        return Ok(Command::Operand(operand));
                    }
                    let what = self.peek().map(Token::describe).unwrap_or_default();
                    return Err(format!(
                        "can't give argument to non-function {}",
                        what_operand(&operand, &what)
                    ));
                }
                Ok(Command::Operand(operand))
            }
        }
    }

    /// The operands up to the end of the command.
    pub(super) fn operands(&mut self) -> Result<Vec<Operand>, String> {
        let mut args = Vec::new();
        while let Some(token) = self.peek() {
            if matches!(token, Token::Pipe | Token::Close) {
                break;
            }
            args.push(self.operand()?);
        }
        Ok(args)
    }

    pub(super) fn operand(&mut self) -> Result<Operand, String> {
        let Some(token) = self.peek().cloned() else {
            return Err("missing operand".to_owned());
        };
        self.at += 1;
        match token {
            Token::Field(path) => {
                check_fields(&path)?;
                Ok(Operand::Field(path))
            }
            Token::Str(text) => Ok(Operand::Str(text)),
            Token::Int(n) => Ok(Operand::Int(n)),
            Token::Ident(name) if name == "true" || name == "false" => {
                Ok(Operand::Bool(name == "true"))
            }
            Token::Ident(name) => match Func::named(&name) {
                Some(func) => Ok(Operand::Sub(
                    Box::new(Pipeline(vec![Command::Call(func, Vec::new())])),
                    Vec::new(),
                )),
                None => Err(format!("function {name:?} not defined")),
            },
            Token::Open => {
                let inner = self.pipeline()?;
                if self.peek() != Some(&Token::Close) {
                    return Err("unclosed left paren".to_owned());
                }
                self.at += 1;
                let fields = match self.peek() {
                    Some(Token::Field(path)) if !path.is_empty() => {
                        let path = path.clone();
                        self.at += 1;
                        path
                    }
                    _ => Vec::new(),
                };
                Ok(Operand::Sub(Box::new(inner), fields))
            }
            Token::Var(name) => Err(format!(
                "variable {name} is not supported (clusterdns templates have no variables)"
            )),
            other => Err(format!("unexpected {} in operand", other.describe())),
        }
    }
}

pub(super) fn what_operand(operand: &Operand, next: &str) -> String {
    match operand {
        Operand::Field(path) => format!(".{} (followed by {next})", path.join(".")),
        _ => format!("value (followed by {next})"),
    }
}

/// Refuses a field the data does not have.
pub(super) fn check_fields(path: &[String]) -> Result<(), String> {
    let Some(first) = path.first() else {
        return Ok(());
    };
    if first == "Message" {
        return Err(
            "can't evaluate field Message: clusterdns templates do not offer the whole message \
             (use .Name, .Type, .Class or .Question)"
                .to_owned(),
        );
    }
    if !FIELDS.contains(&first.as_str()) {
        return Err(format!(
            "can't evaluate field {first} in type *template.templateData"
        ));
    }
    match (first.as_str(), path.get(1)) {
        (_, None) | ("Group", Some(_)) if path.len() <= 2 => Ok(()),
        ("Question", Some(field)) if path.len() == 2 => {
            if QUESTION_FIELDS.contains(&field.as_str()) {
                Ok(())
            } else {
                Err(format!(
                    "can't evaluate field {field} in type *dns.Question"
                ))
            }
        }
        _ => Err(format!(
            "can't evaluate field {} in type string",
            path.last().map(String::as_str).unwrap_or_default()
        )),
    }
}
