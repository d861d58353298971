//! `switchyard`: one binary for every part of Switchyard.

fn main() {
    println!("switchyard");
}
