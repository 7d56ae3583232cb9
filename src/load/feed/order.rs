//! The order in which calls take a feed's rows.

use super::FeedError;

/// The order in which calls take the feed's rows (`feed.order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FeedOrder {
    /// Row 0, 1, 2, … for call 0, 1, 2, …, wrapping around after the last.
    #[default]
    Sequential,
    /// A row drawn uniformly for each call from the scenario's seed and the call's number.
    Random,
}

impl FeedOrder {
    /// Every order's name, as `feed.order` takes it.
    pub const NAMES: [&'static str; 2] = ["sequential", "random"];

    /// The order named `given` (case and surrounding spaces ignored); an unknown name is refused with the
    /// closest one.
    pub fn parse(given: &str) -> Result<Self, FeedError> {
        match given.trim().to_ascii_lowercase().as_str() {
            "sequential" => Ok(Self::Sequential),
            "random" => Ok(Self::Random),
            _ => Err(FeedError::UnknownOrder {
                given: given.to_owned(),
                hint: crate::fields::closest(given.trim(), Self::NAMES)
                    .map(|name| format!("; did you mean '{name}'?"))
                    .unwrap_or_default(),
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Random => "random",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_order_is_refused_with_the_closest_name() {
        assert_eq!(FeedOrder::parse(" Random ").unwrap(), FeedOrder::Random);
        assert_eq!(
            FeedOrder::parse("sequential").unwrap(),
            FeedOrder::Sequential
        );
        assert_eq!(
            FeedOrder::parse("sequental").unwrap_err().to_string(),
            "feed.order: unknown order 'sequental'; did you mean 'sequential'? (one of sequential, random)"
        );
        assert_eq!(
            FeedOrder::parse("shuffle").unwrap_err().to_string(),
            "feed.order: unknown order 'shuffle' (one of sequential, random)"
        );
        assert_eq!(FeedOrder::Random.name(), "random");
    }
}
