//! Points and shapes on the plane.

use std::fmt;

/// A point with floating-point coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Horizontal coordinate.
    pub x: f64,
    /// Vertical coordinate.
    pub y: f64,
}

impl Point {
    /// A point at `(x, y)`.
    pub fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }

    /// The origin `(0, 0)`.
    pub fn origin() -> Self {
        Point::new(0.0, 0.0)
    }

    /// Euclidean distance to another point.
    pub fn distance(&self, other: &Point) -> f64 {
        ((self.x - other.x).powi(2) + (self.y - other.y).powi(2)).sqrt()
    }

    /// The point moved by `(dx, dy)`.
    pub fn translate(&self, dx: f64, dy: f64) -> Point {
        Point::new(self.x + dx, self.y + dy)
    }

    /// The midpoint between this point and another.
    pub fn midpoint(&self, other: &Point) -> Point {
        Point::new((self.x + other.x) / 2.0, (self.y + other.y) / 2.0)
    }
}

impl fmt::Display for Point {
    /// Formats as `(x, y)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

/// A shape with a size.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A circle with its radius.
    Circle { radius: f64 },
    /// An axis-aligned rectangle.
    Rect { width: f64, height: f64 },
    /// A triangle given by its three corners.
    Triangle(Point, Point, Point),
}

/// Anything with an area and a perimeter.
pub trait Measure {
    /// The enclosed area.
    fn area(&self) -> f64;
    /// The length of the boundary.
    fn perimeter(&self) -> f64;
}

impl Measure for Shape {
    /// Area by the usual formulas (the shoelace formula for triangles).
    fn area(&self) -> f64 {
        match self {
            Shape::Circle { radius } => std::f64::consts::PI * radius * radius,
            Shape::Rect { width, height } => width * height,
            Shape::Triangle(a, b, c) => ((a.x * (b.y - c.y) + b.x * (c.y - a.y) + c.x * (a.y - b.y)) / 2.0).abs(),
        }
    }

    /// Perimeter: circumference, twice width plus height, or the three sides.
    fn perimeter(&self) -> f64 {
        match self {
            Shape::Circle { radius } => 2.0 * std::f64::consts::PI * radius,
            Shape::Rect { width, height } => 2.0 * (width + height),
            Shape::Triangle(a, b, c) => a.distance(b) + b.distance(c) + c.distance(a),
        }
    }
}

impl Shape {
    /// A square with the given side.
    pub fn square(side: f64) -> Shape {
        Shape::Rect { width: side, height: side }
    }

    /// True for a rectangle whose sides are equal.
    pub fn is_square(&self) -> bool {
        matches!(self, Shape::Rect { width, height } if width == height)
    }

    /// The same shape scaled by `factor`.
    pub fn scale(&self, factor: f64) -> Shape {
        match self {
            Shape::Circle { radius } => Shape::Circle { radius: radius * factor },
            Shape::Rect { width, height } => Shape::Rect { width: width * factor, height: height * factor },
            Shape::Triangle(a, b, c) => Shape::Triangle(
                Point::new(a.x * factor, a.y * factor),
                Point::new(b.x * factor, b.y * factor),
                Point::new(c.x * factor, c.y * factor),
            ),
        }
    }
}

/// A label for a point, using its `Display` form.
pub fn label(p: &Point) -> String {
    format!("point {p}")
}

/// Total area of many shapes.
pub fn total_area(shapes: &[Shape]) -> f64 {
    shapes.iter().map(Measure::area).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_is_pythagorean() {
        assert_eq!(Point::origin().distance(&Point::new(3.0, 4.0)), 5.0);
    }

    #[test]
    fn square_area() {
        assert_eq!(Shape::square(3.0).area(), 9.0);
        assert!(Shape::square(2.0).is_square());
    }
}
