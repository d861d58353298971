//! A bounded YAML reader: the first document of a text as a [`Yaml`] tree, built
//! from yaml-rust2's event parser, never with its recursive loader (whose alias
//! copies have no bound: "billion laughs"), within fixed bounds whatever the input:
//! [`MAX_DEPTH`] levels of nesting, and [`MAX_NODES`] nodes and [`MAX_TEXT`] bytes of
//! text once aliases are expanded. Every walk of the tree is then shallow and its
//! memory bounded. The Clash reader (`clash_read.rs`) is its user.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;
use yaml_rust2::yaml::{Hash, Yaml};

/// The deepest nesting read. A Clash config nests about 6 levels (`dns` →
/// `nameserver-policy` → ...); this leaves room and keeps every walk of the tree
/// shallow.
pub const MAX_DEPTH: usize = 32;
/// The most nodes of the tree, aliases expanded: far more than 10,000 proxies of
/// 20 fields take, and about 50 MiB of memory at worst.
pub const MAX_NODES: usize = 1 << 20;
/// The most bytes of scalar text of the tree, aliases expanded: 8 MiB, twice the
/// largest Clash config read.
pub const MAX_TEXT: usize = 8 << 20;

/// Why a text could not be read as a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoadError {
    /// Not YAML, or YAML whose tree this reader does not build (an alias to an
    /// unknown anchor, a key repeated in a mapping).
    Yaml(String),
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Larger than [`MAX_NODES`] or [`MAX_TEXT`] once aliases are expanded.
    TooBig,
}

/// What a node of the tree costs against the bounds, and how deep it goes.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    nodes: usize,
    text: usize,
    /// Levels of collections in it (0 for a scalar).
    height: usize,
}

/// The bounds' tally.
#[derive(Default)]
struct Budget {
    nodes: usize,
    text: usize,
}

impl Budget {
    fn charge(&mut self, cost: Cost) -> Result<(), LoadError> {
        self.nodes = self.nodes.saturating_add(cost.nodes);
        self.text = self.text.saturating_add(cost.text);
        if self.nodes > MAX_NODES || self.text > MAX_TEXT {
            return Err(LoadError::TooBig);
        }
        Ok(())
    }
}

/// A collection being built: the node, its anchor, the key waiting for its value
/// (in a mapping), the budget when it opened, and its children's greatest height.
struct Open {
    node: Yaml,
    anchor: usize,
    key: Option<Yaml>,
    nodes_before: usize,
    text_before: usize,
    height: usize,
}

/// The first document of `text` as a tree (`Null` when there is none), within
/// [`MAX_DEPTH`], [`MAX_NODES`] and [`MAX_TEXT`]. Scalars are typed as
/// yaml-rust2's loader types them (YAML 1.2's core schema; quoted ones are strings).
pub(crate) fn load(text: &str) -> Result<Yaml, LoadError> {
    let mut parser = Parser::new_from_str(text);
    let mut open: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, (Yaml, Cost)> = HashMap::new();
    let mut budget = Budget::default();
    loop {
        let (event, _) = parser
            .next_token()
            .map_err(|e| LoadError::Yaml(e.to_string()))?;
        let (node, anchor, cost) = match event {
            Event::StreamEnd | Event::DocumentEnd => return Ok(Yaml::Null),
            Event::Nothing | Event::StreamStart | Event::DocumentStart => continue,
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if open.len() >= MAX_DEPTH {
                    return Err(LoadError::TooDeep);
                }
                let mapping = matches!(event, Event::MappingStart(..));
                budget.charge(Cost {
                    nodes: 1,
                    ..Cost::default()
                })?;
                open.push(Open {
                    node: if mapping {
                        Yaml::Hash(Hash::new())
                    } else {
                        Yaml::Array(Vec::new())
                    },
                    anchor,
                    key: None,
                    nodes_before: budget.nodes - 1,
                    text_before: budget.text,
                    height: 0,
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(done) = open.pop() else {
                    return Err(LoadError::Yaml("a collection ends that never began".into()));
                };
                if done.key.is_some() {
                    return Err(LoadError::Yaml("a mapping ends after a key".into()));
                }
                let cost = Cost {
                    nodes: budget.nodes - done.nodes_before,
                    text: budget.text - done.text_before,
                    height: done.height + 1,
                };
                (done.node, done.anchor, cost)
            }
            Event::Scalar(value, style, anchor, tag) => {
                let cost = Cost {
                    nodes: 1,
                    text: value.len(),
                    height: 0,
                };
                budget.charge(cost)?;
                (scalar(value, style, tag.as_ref()), anchor, cost)
            }
            Event::Alias(id) => {
                let (node, cost) = anchors
                    .get(&id)
                    .ok_or_else(|| LoadError::Yaml("an alias to an unknown anchor".into()))?;
                if open.len() + cost.height > MAX_DEPTH {
                    return Err(LoadError::TooDeep);
                }
                budget.charge(*cost)?;
                (node.clone(), 0, *cost)
            }
        };
        if anchor > 0 {
            // The copy kept for aliases counts too: nested anchors cannot multiply
            // memory past the bounds either.
            budget.charge(cost)?;
            anchors.insert(anchor, (node.clone(), cost));
        }
        let Some(parent) = open.last_mut() else {
            // The document's root is complete; later documents are not read.
            return Ok(node);
        };
        parent.height = parent.height.max(cost.height);
        match &mut parent.node {
            Yaml::Hash(map) => match parent.key.take() {
                None => parent.key = Some(node),
                Some(k) => {
                    if map.insert(k, node).is_some() {
                        return Err(LoadError::Yaml("a key is repeated in a mapping".into()));
                    }
                }
            },
            Yaml::Array(items) => items.push(node),
            _ => return Err(LoadError::Yaml("a scalar holds a node".into())),
        }
    }
}

/// A scalar typed as yaml-rust2's loader types it: quoted text is a string, plain
/// text by the core schema (`443` a number, `true` a boolean, `~` null), `!!str`
/// forces a string.
fn scalar(value: String, style: TScalarStyle, tag: Option<&Tag>) -> Yaml {
    let forced_string = tag.is_some_and(|t| t.handle == "tag:yaml.org,2002:" && t.suffix == "str");
    if style != TScalarStyle::Plain || forced_string {
        Yaml::String(value)
    } else {
        Yaml::from_str(&value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_ok(text: &str) -> Yaml {
        load(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"))
    }

    #[test]
    fn scalars_are_typed_as_the_loader_types_them() {
        let tree =
            load_ok("a: 443\nb: \"443\"\nc: true\nd: ~\ne: !!str 0x1F\nf: 0x1F\ng: 1.5\nh: no\n");
        let loader = &yaml_rust2::YamlLoader::load_from_str(
            "a: 443\nb: \"443\"\nc: true\nd: ~\ne: !!str 0x1F\nf: 0x1F\ng: 1.5\nh: no\n",
        )
        .unwrap()[0];
        assert_eq!(&tree, loader);
        assert_eq!(tree["e"], Yaml::String("0x1F".into()));
        assert_eq!(tree["h"], Yaml::String("no".into()));
    }

    #[test]
    fn aliases_merge_keys_and_documents() {
        let tree = load_ok("a: &x {k: [1, 2]}\nb: *x\nc: {<<: *x}\n---\nd: 1\n");
        assert_eq!(tree["b"], tree["a"]);
        assert_eq!(tree["c"]["<<"], tree["a"]);
        assert!(tree["d"].is_badvalue(), "only the first document is read");
        assert_eq!(load_ok(""), Yaml::Null);
        assert_eq!(load_ok("# only a comment\n"), Yaml::Null);
        for bad in ["a: [", "{a: 1, a: 2}", "a: *nowhere", "\"a", "a: b: c"] {
            assert!(matches!(load(bad), Err(LoadError::Yaml(_))), "{bad:?}");
        }
    }

    /// Hostile YAML is refused within the bounds, not followed: deep nesting in either
    /// style, aliases that multiply ("billion laughs"), aliases that deepen, many
    /// nodes.
    #[test]
    fn hostile_yaml_is_refused_within_bounds() {
        let flow = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(load(&flow), Err(LoadError::TooDeep));
        let block = format!("{}x\n", "- ".repeat(1_000_000));
        assert_eq!(load(&block), Err(LoadError::TooDeep));
        let nested: String = (0..40).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        assert_eq!(load(&nested), Err(LoadError::TooDeep));
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(load(&ok).is_ok());

        let mut laughs =
            String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..10 {
            let prev = format!("*a{}", i - 1);
            let items = [prev.as_str(); 10].join(", ");
            laughs.push_str(&format!("a{i}: &a{i} [{items}]\n"));
        }
        assert_eq!(load(&laughs), Err(LoadError::TooBig));
        let text = format!(
            "a: &a '{}'\nb: [{}]",
            "x".repeat(1 << 20),
            ["*a"; 9].join(",")
        );
        assert_eq!(load(&text), Err(LoadError::TooBig));

        let mut deeper = String::from("d0: &d0 [[[[[[[[[[x]]]]]]]]]]\n");
        for i in 1..5 {
            deeper.push_str(&format!("d{i}: &d{i} [[[[[[[[[[*d{}]]]]]]]]]]\n", i - 1));
        }
        assert_eq!(load(&deeper), Err(LoadError::TooDeep));

        let many = format!("[{}]", ["1"; MAX_NODES].join(","));
        assert_eq!(load(&many), Err(LoadError::TooBig));
    }
}
