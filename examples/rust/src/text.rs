//! String helpers.

/// Counts the words separated by whitespace.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Reverses the characters of a string.
pub fn reverse(text: &str) -> String {
    text.chars().rev().collect()
}

/// True when the text reads the same backwards, ignoring case and non-letters.
pub fn is_palindrome(text: &str) -> bool {
    let letters: Vec<char> = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    letters.iter().eq(letters.iter().rev())
}

/// Upper-cases the first letter of every word.
pub fn title_case(text: &str) -> String {
    text.split(' ')
        .map(capitalize)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Upper-cases the first letter of one word.
pub fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

/// Counts the vowels (a, e, i, o, u, either case).
pub fn vowel_count(text: &str) -> usize {
    text.chars().filter(|c| "aeiouAEIOU".contains(*c)).count()
}

/// Cuts the text to at most `max` characters, adding "..." when it was cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}...")
}

/// Run-length encodes a string: "aaab" becomes "3a1b".
pub fn run_length_encode(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut n = 1;
        while chars.peek() == Some(&c) {
            chars.next();
            n += 1;
        }
        out.push_str(&format!("{n}{c}"));
    }
    out
}

/// The longest word, the first one on ties; `None` for text without words.
pub fn longest_word(text: &str) -> Option<&str> {
    let mut best: Option<&str> = None;
    for word in text.split_whitespace() {
        if best.map_or(true, |b| word.len() > b.len()) {
            best = Some(word);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palindromes() {
        assert!(is_palindrome("A man, a plan, a canal: Panama"));
        assert!(!is_palindrome("synth"));
    }

    #[test]
    fn encodes_runs() {
        assert_eq!(run_length_encode("aaabcc"), "3a1b2c");
    }

    #[test]
    fn truncates_with_ellipsis() {
        assert_eq!(truncate("abcdef", 3), "abc...");
        assert_eq!(truncate("ab", 3), "ab");
    }
}
