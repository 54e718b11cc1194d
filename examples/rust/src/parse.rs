//! A tiny parser for sums and products of integers, like `2 * (3 + 4)`.

/// A lexical token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// An integer literal.
    Num(i64),
    /// `+`
    Plus,
    /// `*`
    Star,
    /// `(`
    Open,
    /// `)`
    Close,
}

/// What went wrong while reading an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// A character that is not part of the language, with its byte offset.
    UnexpectedChar(char, usize),
    /// The input ended where more was needed.
    UnexpectedEnd,
    /// A token where another was expected.
    UnexpectedToken(Token),
}

/// Splits the input into tokens, skipping whitespace.
pub fn tokenize(input: &str) -> Result<Vec<Token>, ParseError> {
    let mut tokens = Vec::new();
    let bytes = input.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        match c {
            ' ' | '\t' | '\n' => i += 1,
            '+' => {
                tokens.push(Token::Plus);
                i += 1;
            }
            '*' => {
                tokens.push(Token::Star);
                i += 1;
            }
            '(' => {
                tokens.push(Token::Open);
                i += 1;
            }
            ')' => {
                tokens.push(Token::Close);
                i += 1;
            }
            '0'..='9' => {
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                let value = input[start..i].parse().map_err(|_| ParseError::UnexpectedChar(c, start))?;
                tokens.push(Token::Num(value));
            }
            other => return Err(ParseError::UnexpectedChar(other, i)),
        }
    }
    Ok(tokens)
}

/// A recursive-descent evaluator over a token list.
pub struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    /// A parser positioned at the first token.
    pub fn new(tokens: Vec<Token>) -> Self {
        Parser { tokens, pos: 0 }
    }

    /// The next token without consuming it.
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.pos).copied()
    }

    /// Consumes and returns the next token.
    fn next(&mut self) -> Option<Token> {
        let token = self.peek();
        self.pos += 1;
        token
    }

    /// `sum := product ('+' product)*`
    pub fn sum(&mut self) -> Result<i64, ParseError> {
        let mut value = self.product()?;
        while self.peek() == Some(Token::Plus) {
            self.next();
            value += self.product()?;
        }
        Ok(value)
    }

    /// `product := atom ('*' atom)*`
    pub fn product(&mut self) -> Result<i64, ParseError> {
        let mut value = self.atom()?;
        while self.peek() == Some(Token::Star) {
            self.next();
            value *= self.atom()?;
        }
        Ok(value)
    }

    /// `atom := number | '(' sum ')'`
    pub fn atom(&mut self) -> Result<i64, ParseError> {
        match self.next() {
            Some(Token::Num(n)) => Ok(n),
            Some(Token::Open) => {
                let value = self.sum()?;
                match self.next() {
                    Some(Token::Close) => Ok(value),
                    Some(other) => Err(ParseError::UnexpectedToken(other)),
                    None => Err(ParseError::UnexpectedEnd),
                }
            }
            Some(other) => Err(ParseError::UnexpectedToken(other)),
            None => Err(ParseError::UnexpectedEnd),
        }
    }

    /// True when every token has been consumed.
    pub fn at_end(&self) -> bool {
        self.pos >= self.tokens.len()
    }
}

/// Evaluates an expression such as `2 * (3 + 4)`.
pub fn evaluate(input: &str) -> Result<i64, ParseError> {
    let mut parser = Parser::new(tokenize(input)?);
    let value = parser.sum()?;
    match parser.peek() {
        None => Ok(value),
        Some(token) => Err(ParseError::UnexpectedToken(token)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_parentheses() {
        assert_eq!(evaluate("2 * (3 + 4)"), Ok(14));
        assert_eq!(evaluate("2 * 3 + 4"), Ok(10));
    }

    #[test]
    fn reports_bad_characters() {
        assert_eq!(evaluate("1 - 2"), Err(ParseError::UnexpectedChar('-', 2)));
    }
}
