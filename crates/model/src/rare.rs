//! [`Rare`]: the part of an object that a large cluster's copies almost never have.

/// A value whose empty form is known at compile time, for [`Rare`].
pub trait Empty: Default + PartialEq + 'static {
    /// The empty value.
    const EMPTY: &'static Self;
}

/// A part of an object that is usually empty, held as one pointer: nothing is allocated while
/// it is empty, and it is never held boxed and empty, so two equal parts compare equal
/// however they were made.
#[derive(Debug, Clone, Default)]
pub struct Rare<T>(Option<Box<T>>);

impl<T: Empty> Rare<T> {
    /// `value`, boxed unless it is empty.
    pub fn new(value: T) -> Self {
        Self((value != *T::EMPTY).then(|| Box::new(value)))
    }

    /// The value (the empty one when there is none).
    pub fn get(&self) -> &T {
        self.0.as_deref().unwrap_or(T::EMPTY)
    }

    /// Changes the value, dropping the box if it leaves it empty.
    pub fn edit(&mut self, edit: impl FnOnce(&mut T)) {
        match &mut self.0 {
            // In place: a value that stays is not boxed again.
            Some(boxed) => {
                edit(boxed);
                if **boxed == *T::EMPTY {
                    self.0 = None;
                }
            }
            None => {
                let mut value = T::default();
                edit(&mut value);
                *self = Self::new(value);
            }
        }
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl<T: Empty> PartialEq for Rare<T> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Names(Vec<String>);

    impl Empty for Names {
        const EMPTY: &'static Self = &Names(Vec::new());
    }

    #[test]
    fn an_empty_value_is_not_boxed_and_equals_the_default() {
        assert_eq!(std::mem::size_of::<Rare<Names>>(), 8);
        let mut rare = Rare::new(Names(vec!["web-0".to_owned()]));
        assert!(!rare.is_empty());
        assert_ne!(rare, Rare::default());
        rare.edit(|names| names.0.clear());
        assert!(rare.is_empty(), "emptied, the box is gone");
        assert_eq!(rare, Rare::default());
        assert_eq!(Rare::new(Names::default()), Rare::default());
        assert_eq!(rare.get(), &Names::default());
    }
}
