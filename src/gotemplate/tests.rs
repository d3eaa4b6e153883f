use super::*;

fn data<'d>(matches: &'d [String], groups: &'d [(String, String)]) -> Data<'d> {
    Data {
        zone: "example.",
        name: "ip-10-1-2-3.example.",
        regex: "^ip-(?P<b>[0-9]*)-",
        matches,
        groups,
        class: "IN",
        qtype: "A",
        remote: "192.0.2.9",
        question: (1, 1),
    }
}

/// Templates and what they give (Go's `text/template` on CoreDNS's `templateData`).
#[test]
fn execute() {
    let matches: Vec<String> = ["ip-10-1-2-3.example.", "1", "2", "3"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let groups: Vec<(String, String)> = [
        ("0", "ip-10-1-2-3.example."),
        ("1", "1"),
        ("2", "2"),
        ("3", "3"),
        ("b", "1"),
        ("c", "2"),
        ("hex", "0a"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let data = data(&matches, &groups);
    let cases: &[(&str, &str)] = &[
        ("plain text", "plain text"),
        (
            "{{ .Name }} 60 IN A 10.0.0.1",
            "ip-10-1-2-3.example. 60 IN A 10.0.0.1",
        ),
        ("{{.Zone}}", "example."),
        ("{{ .Class }} {{ .Type }}", "IN A"),
        ("{{ .Regex }}", "^ip-(?P<b>[0-9]*)-"),
        ("{{ .Remote }}", "192.0.2.9"),
        ("{{ index .Match 1 }}.{{ index .Match 3 }}", "1.3"),
        ("{{ .Group.b }}-{{ .Group.c }}", "1-2"),
        ("{{ index .Group \"c\" }}", "2"),
        ("{{ .Group.nope }}", "<no value>"),
        ("{{ index .Group \"nope\" }}|", "|"),
        ("{{ parseInt .Group.hex 16 8 }}", "10"),
        ("{{ parseInt \"0x1f\" 0 64 }}", "31"),
        ("{{ .Match }}", "[ip-10-1-2-3.example. 1 2 3]"),
        ("{{ printf \"%s-%d\" .Type 7 }}", "A-7"),
        ("{{ .Name | printf \"<%s>\" }}", "<ip-10-1-2-3.example.>"),
        ("{{ print 1 2 \"x\" 3 }}", "1 2x3"),
        ("{{ len .Match }}", "4"),
        ("{{ .Question.Qtype }}/{{ .Question.Qclass }}", "1/1"),
        ("{{ .Meta \"kubernetes/client-namespace\" }}.", "."),
        ("a {{- \" b \" -}} c", "a b c"),
        ("a  {{- .Type }}", "aA"),
        ("{{/* a comment */}}x", "x"),
        ("{{ (index .Match 2) }}", "2"),
        ("{{ `raw {{` }}", "raw {{"),
    ];
    for (source, want) in cases {
        let template = Template::parse(source).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(template.source(), *source);
        assert_eq!(template.execute(&data).as_deref(), Ok(*want), "{source}");
    }
}

/// What Go would refuse when the template is parsed (or, for unknown fields, when it runs:
/// clusterdns checks those up front).
#[test]
fn parse_errors() {
    let cases: &[(&str, &str)] = &[
        ("{{ .Name ", "unclosed action"),
        (
            "{{ .Nmae }}",
            "can't evaluate field Nmae in type *template.templateData",
        ),
        ("{{ .Group.a.b }}", "can't evaluate field b"),
        (
            "{{ .Question.Foo }}",
            "can't evaluate field Foo in type *dns.Question",
        ),
        ("{{ .Message }}", "can't evaluate field Message"),
        ("{{ upper .Name }}", "function \"upper\" not defined"),
        ("{{ if .Name }}x{{ end }}", "is not supported"),
        ("{{ $x := 1 }}", "variable assignment is not supported"),
        ("{{ $x }}", "variable $x is not supported"),
        ("{{ \"open }}", "unclosed action"),
        (
            "{{ .Name .Zone }}",
            "can't give argument to non-function .Name",
        ),
        ("{{ 1 | 2 }}", "non executable command in pipeline stage 2"),
        ("{{/* open }}", "unclosed comment"),
        ("{{ (index .Match 1 }}", "unclosed left paren"),
        ("{{ \"\\q\" }}", "unknown escape sequence"),
    ];
    for (source, want) in cases {
        match Template::parse(source) {
            Ok(template) => panic!("{source}: parsed as {template:?}"),
            Err(error) => assert!(error.to_string().contains(want), "{source}: {error}"),
        }
    }
}

/// Errors at execution: the query's.
#[test]
fn execution_errors() {
    let matches = vec!["a.".to_owned()];
    let groups = vec![("0".to_owned(), "a.".to_owned())];
    let data = data(&matches, &groups);
    let cases: &[(&str, &str)] = &[
        (
            "{{ index .Match 5 }}",
            "error calling index: index out of range: 5",
        ),
        (
            "{{ parseInt .Name 10 8 }}",
            "error calling parseInt: strconv.ParseUint: parsing \"ip-10-1-2-3.example.\": invalid syntax",
        ),
        (
            "{{ parseInt \"300\" 10 8 }}",
            "strconv.ParseUint: parsing \"300\": value out of range",
        ),
        (
            "{{ parseInt \"1\" }}",
            "wrong number of args for parseInt: want 3 got 1",
        ),
        ("{{ index .Name 1 }}", "can't index item of type string"),
        ("{{ . }}", "can't print the whole template data"),
    ];
    for (source, want) in cases {
        let template = Template::parse(source).unwrap_or_else(|e| panic!("{source}: {e}"));
        match template.execute(&data) {
            Ok(text) => panic!("{source}: gave {text:?}"),
            Err(error) => assert!(error.to_string().contains(want), "{source}: {error}"),
        }
    }
}
