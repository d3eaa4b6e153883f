//! The syntax tree of a compiled template: its text and actions, an action's pipeline of
//! commands, their operands and the functions they call.

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Node {
    Text(String),
    Action(Pipeline),
}

/// Commands joined by `|`: each one's value is the last argument of the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pipeline(pub(super) Vec<Command>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Command {
    /// One operand.
    Operand(Operand),
    /// A function and its arguments.
    Call(Func, Vec<Operand>),
    /// `.Meta NAME`: the metadata plugin's value (always empty: clusterdns has no
    /// *metadata*).
    Meta(Vec<Operand>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Operand {
    /// `.`, or `.A.B`: the fields of the data.
    Field(Vec<String>),
    Str(String),
    Int(i64),
    Bool(bool),
    /// `( pipeline )`, optionally followed by fields.
    Sub(Box<Pipeline>, Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Func {
    Index,
    ParseInt,
    Print,
    Printf,
    Println,
    Len,
}

impl Func {
    pub(super) fn named(name: &str) -> Option<Self> {
        Some(match name {
            "index" => Self::Index,
            "parseInt" => Self::ParseInt,
            "print" => Self::Print,
            "printf" => Self::Printf,
            "println" => Self::Println,
            "len" => Self::Len,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Index => "index",
            Self::ParseInt => "parseInt",
            Self::Print => "print",
            Self::Printf => "printf",
            Self::Println => "println",
            Self::Len => "len",
        }
    }
}
