//! [`SmallMap`]: a sorted map kept in one `Vec`, for the few-entry maps a
//! results document holds once per cell (a cell's scores, a case's pass@k).
//!
//! A `BTreeMap` with a single entry allocates a whole leaf node (room for 11
//! entries); a `SmallMap` allocates room for the entries it holds. Lookups
//! are binary searches, inserts and removals shift the entries after them,
//! so it suits maps of a handful to a few hundred entries. It iterates, compares,
//! prints and (de)serializes as a `BTreeMap` of the same entries does.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::ops::Index;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A map with sorted, unique keys, kept in a `Vec<(K, V)>`.
///
/// It has the part of `BTreeMap`'s API that maps this small need, and the
/// same behaviour: iteration in key order, `insert` returning the old value,
/// `collect`, `extend` and deserialization letting a later duplicate win,
/// serialization as a map in key order.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SmallMap<K, V> {
    /// Sorted by key, keys unique.
    entries: Vec<(K, V)>,
}

impl<K, V> SmallMap<K, V> {
    /// An empty map; it allocates nothing until the first insert.
    pub const fn new() -> Self {
        SmallMap {
            entries: Vec::new(),
        }
    }

    /// An empty map with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        SmallMap {
            entries: Vec::with_capacity(capacity),
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries the map holds room for.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Give back the room beyond the entries held.
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }

    /// Remove every entry (keeping the room).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Keep only the entries for which `keep` returns true, in key order.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    /// The entries, in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter {
            inner: self.entries.iter(),
        }
    }

    /// The entries, in key order, values mutable.
    pub fn iter_mut(&mut self) -> IterMut<'_, K, V> {
        IterMut {
            inner: self.entries.iter_mut(),
        }
    }

    /// The keys, in order.
    pub fn keys(&self) -> Keys<'_, K, V> {
        Keys {
            inner: self.entries.iter(),
        }
    }

    /// The values, in key order.
    pub fn values(&self) -> Values<'_, K, V> {
        Values {
            inner: self.entries.iter(),
        }
    }

    /// The values, in key order, mutable.
    pub fn values_mut(&mut self) -> ValuesMut<'_, K, V> {
        ValuesMut {
            inner: self.entries.iter_mut(),
        }
    }

    /// The entry with the smallest key.
    pub fn first_key_value(&self) -> Option<(&K, &V)> {
        self.entries.first().map(|(k, v)| (k, v))
    }

    /// The entry with the largest key.
    pub fn last_key_value(&self) -> Option<(&K, &V)> {
        self.entries.last().map(|(k, v)| (k, v))
    }
}

impl<K: Ord, V> SmallMap<K, V> {
    /// Where `key` is (`Ok`) or would go (`Err`).
    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// The value of `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    /// The stored key and the value of `key`.
    pub fn get_key_value<Q>(&self, key: &Q) -> Option<(&K, &V)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| {
            let (k, v) = &self.entries[i];
            (k, v)
        })
    }

    /// The value of `key`, mutable.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// Whether the map has `key`.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    /// Set `key` to `value`, returning the value it had. As with `BTreeMap`,
    /// an existing key is not replaced, only its value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// Remove `key`, returning its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.remove_entry(key).map(|(_, v)| v)
    }

    /// Remove `key`, returning the stored key and its value.
    pub fn remove_entry<Q>(&mut self, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| self.entries.remove(i))
    }

    /// Entries in any order, duplicates included, into a map: sorted by key
    /// (stably), and of equal keys the last one kept, as `BTreeMap` would.
    fn from_entries(mut entries: Vec<(K, V)>) -> Self {
        let sorted = entries
            .windows(2)
            .all(|w| w[0].0.cmp(&w[1].0) == Ordering::Less);
        if !sorted {
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            // `dedup_by` keeps the earlier of two equal entries; swapping
            // first keeps the later one's key and value in its place.
            entries.dedup_by(|later, earlier| {
                let same = later.0 == earlier.0;
                if same {
                    std::mem::swap(later, earlier);
                }
                same
            });
        }
        SmallMap { entries }
    }
}

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap::new()
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for SmallMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K, Q, V> Index<&Q> for SmallMap<K, V>
where
    K: Ord + Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = V;

    /// The value of `key`; panics when the map does not have it.
    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry found for key")
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SmallMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        SmallMap::from_entries(iter.into_iter().collect())
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for SmallMap<K, V> {
    fn from(entries: [(K, V); N]) -> Self {
        SmallMap::from_entries(Vec::from(entries))
    }
}

impl<K: Ord, V> Extend<(K, V)> for SmallMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.extend(iter);
        // The stable sort puts new entries after existing ones of the same
        // key, so they win.
        *self = SmallMap::from_entries(entries);
    }
}

impl<'a, K: Ord + Copy, V: Copy> Extend<(&'a K, &'a V)> for SmallMap<K, V> {
    fn extend<I: IntoIterator<Item = (&'a K, &'a V)>>(&mut self, iter: I) {
        self.extend(iter.into_iter().map(|(k, v)| (*k, *v)));
    }
}

impl<K, V> IntoIterator for SmallMap<K, V> {
    type Item = (K, V);
    type IntoIter = IntoIter<K, V>;

    fn into_iter(self) -> IntoIter<K, V> {
        IntoIter {
            inner: self.entries.into_iter(),
        }
    }
}

impl<'a, K, V> IntoIterator for &'a SmallMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Iter<'a, K, V> {
        self.iter()
    }
}

impl<'a, K, V> IntoIterator for &'a mut SmallMap<K, V> {
    type Item = (&'a K, &'a mut V);
    type IntoIter = IterMut<'a, K, V>;

    fn into_iter(self) -> IterMut<'a, K, V> {
        self.iter_mut()
    }
}

/// Defines an iterator over a slice iterator of entries, mapping each entry.
macro_rules! entry_iter {
    ($(#[$doc:meta])* $name:ident<$($lt:lifetime,)? $k:ident, $v:ident>, $inner:ty, $item:ty, |$e:ident| $map:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<$($lt,)? $k, $v> {
            inner: $inner,
        }

        impl<$($lt,)? $k, $v> Iterator for $name<$($lt,)? $k, $v> {
            type Item = $item;

            fn next(&mut self) -> Option<$item> {
                self.inner.next().map(|$e| $map)
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                self.inner.size_hint()
            }
        }

        impl<$($lt,)? $k, $v> DoubleEndedIterator for $name<$($lt,)? $k, $v> {
            fn next_back(&mut self) -> Option<$item> {
                self.inner.next_back().map(|$e| $map)
            }
        }

        impl<$($lt,)? $k, $v> ExactSizeIterator for $name<$($lt,)? $k, $v> {}
        impl<$($lt,)? $k, $v> FusedIterator for $name<$($lt,)? $k, $v> {}
    };
}

entry_iter!(
    /// The entries of a [`SmallMap`], in key order ([`SmallMap::iter`]).
    Iter<'a, K, V>, std::slice::Iter<'a, (K, V)>, (&'a K, &'a V), |e| (&e.0, &e.1)
);
entry_iter!(
    /// The entries of a [`SmallMap`], values mutable ([`SmallMap::iter_mut`]).
    IterMut<'a, K, V>, std::slice::IterMut<'a, (K, V)>, (&'a K, &'a mut V), |e| (&e.0, &mut e.1)
);
entry_iter!(
    /// The keys of a [`SmallMap`], in order ([`SmallMap::keys`]).
    Keys<'a, K, V>, std::slice::Iter<'a, (K, V)>, &'a K, |e| &e.0
);
entry_iter!(
    /// The values of a [`SmallMap`], in key order ([`SmallMap::values`]).
    Values<'a, K, V>, std::slice::Iter<'a, (K, V)>, &'a V, |e| &e.1
);
entry_iter!(
    /// The values of a [`SmallMap`], mutable ([`SmallMap::values_mut`]).
    ValuesMut<'a, K, V>, std::slice::IterMut<'a, (K, V)>, &'a mut V, |e| &mut e.1
);
entry_iter!(
    /// The entries of a [`SmallMap`] by value, in key order.
    IntoIter<K, V>, std::vec::IntoIter<(K, V)>, (K, V), |e| e
);

// Shared iterators clone without `K: Clone, V: Clone`, as the slice's does.
impl<K, V> Clone for Iter<'_, K, V> {
    fn clone(&self) -> Self {
        Iter {
            inner: self.inner.clone(),
        }
    }
}

impl<K, V> Clone for Keys<'_, K, V> {
    fn clone(&self) -> Self {
        Keys {
            inner: self.inner.clone(),
        }
    }
}

impl<K, V> Clone for Values<'_, K, V> {
    fn clone(&self) -> Self {
        Values {
            inner: self.inner.clone(),
        }
    }
}

/// As `BTreeMap` does: a map of the entries in key order.
impl<K: Serialize, V: Serialize> Serialize for SmallMap<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// From a map in any order; of duplicate keys the last wins, as with
/// `BTreeMap`. The map holds no room beyond its entries.
impl<'de, K, V> Deserialize<'de> for SmallMap<K, V>
where
    K: Deserialize<'de> + Ord,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<K, V>(PhantomData<fn() -> (K, V)>);

        impl<'de, K, V> Visitor<'de> for MapVisitor<K, V>
        where
            K: Deserialize<'de> + Ord,
            V: Deserialize<'de>,
        {
            type Value = SmallMap<K, V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                // Trust the announced length only so far (as serde does).
                const MAX_PREALLOCATED: usize = 1024 * 1024;
                let room = MAX_PREALLOCATED / std::mem::size_of::<(K, V)>().max(1);
                let mut entries = Vec::with_capacity(access.size_hint().unwrap_or(0).min(room));
                while let Some(entry) = access.next_entry()? {
                    entries.push(entry);
                }
                // Maps read back (baselines, the store) hold no spare room.
                let mut map = SmallMap::from_entries(entries);
                map.shrink_to_fit();
                Ok(map)
            }
        }

        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Inserts, reinserts and removes with both maps, checking they agree.
    fn agree<K, V>(ops: &[(K, Option<V>)])
    where
        K: Ord + Clone + fmt::Debug,
        V: PartialEq + Clone + fmt::Debug,
    {
        let mut small = SmallMap::new();
        let mut btree = BTreeMap::new();
        for (k, v) in ops {
            match v {
                Some(v) => assert_eq!(
                    small.insert(k.clone(), v.clone()),
                    btree.insert(k.clone(), v.clone())
                ),
                None => assert_eq!(small.remove(k), btree.remove(k)),
            }
            assert_eq!(small.len(), btree.len());
            assert!(small.iter().eq(btree.iter()));
        }
    }

    #[test]
    fn behaves_like_a_btreemap() {
        agree(&[
            (5u32, Some('a')),
            (1, Some('b')),
            (9, Some('c')),
            (5, Some('d')),
            (3, None),
            (1, None),
            (7, Some('e')),
            (0, Some('f')),
            (9, None),
        ]);
        agree(&[
            ("b".to_string(), Some(1)),
            ("a".to_string(), Some(2)),
            ("b".to_string(), Some(3)),
            ("c".to_string(), None),
        ]);
    }

    #[test]
    fn lookups_borrow_the_key() {
        let mut m: SmallMap<String, u32> = SmallMap::with_capacity(4);
        assert!(m.is_empty() && m.capacity() >= 4);
        m.insert("quality".into(), 1);
        m.insert("latency".into(), 2);
        assert_eq!(m.get("quality"), Some(&1));
        assert_eq!(m.get(&"latency".to_string()), Some(&2));
        assert!(m.contains_key("latency") && !m.contains_key("cost"));
        *m.get_mut("quality").unwrap() += 10;
        assert_eq!(m["quality"], 11);
        assert_eq!(
            m.get_key_value("latency"),
            Some((&"latency".to_string(), &2))
        );
        assert_eq!(
            m.first_key_value().map(|(k, _)| k.as_str()),
            Some("latency")
        );
        assert_eq!(m.last_key_value().map(|(k, _)| k.as_str()), Some("quality"));
        assert_eq!(m.remove("cost"), None);
        assert_eq!(m.remove("latency"), Some(2));
        assert_eq!(m.len(), 1);
    }

    #[test]
    #[should_panic(expected = "no entry found for key")]
    fn indexing_a_missing_key_panics() {
        let m: SmallMap<u32, f64> = SmallMap::new();
        let _ = m[&1];
    }

    #[test]
    fn iterators_go_in_key_order() {
        let mut m: SmallMap<u32, i32> = [(3, 30), (1, 10), (2, 20)].into();
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [10, 20, 30]);
        assert_eq!(m.keys().rev().copied().collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(m.iter().len(), 3);
        m.values_mut().for_each(|v| *v += 1);
        for (k, v) in m.iter_mut() {
            *v += *k as i32;
        }
        for (_, v) in &mut m {
            *v *= 2;
        }
        let by_ref: Vec<(&u32, &i32)> = (&m).into_iter().collect();
        assert_eq!(by_ref, [(&1, &24), (&2, &46), (&3, &68)]);
        m.retain(|k, _| k % 2 == 1);
        assert_eq!(m.into_iter().collect::<Vec<_>>(), [(1, 24), (3, 68)]);
    }

    #[test]
    fn later_duplicates_win_as_in_a_btreemap() {
        let pairs = [(2, "a"), (1, "b"), (2, "c"), (1, "d"), (3, "e"), (2, "f")];
        let small: SmallMap<u32, &str> = pairs.into_iter().collect();
        let btree: BTreeMap<u32, &str> = pairs.into_iter().collect();
        assert!(small.iter().eq(btree.iter()));
        assert_eq!(small, SmallMap::from([(1, "d"), (2, "f"), (3, "e")]));

        let mut small = small;
        let mut btree = btree;
        let more = [(3, "g"), (0, "h"), (3, "i")];
        small.extend(more);
        btree.extend(more);
        assert!(small.iter().eq(btree.iter()));
        small.extend([(&4, &"j")]);
        assert_eq!(small.get(&4), Some(&"j"));
    }

    #[test]
    fn prints_and_compares_like_a_map() {
        let m: SmallMap<&str, u32> = [("b", 2), ("a", 1)].into();
        let b: BTreeMap<&str, u32> = [("b", 2), ("a", 1)].into();
        assert_eq!(format!("{m:?}"), format!("{b:?}"));
        assert_eq!(format!("{m:#?}"), format!("{b:#?}"));
        assert_eq!(m.clone(), m);
        assert_ne!(m, SmallMap::from([("a", 1)]));
        assert_eq!(SmallMap::<u8, u8>::default(), SmallMap::new());
    }

    #[test]
    fn shrink_to_fit_leaves_room_for_the_entries_only() {
        let mut m: SmallMap<String, f64> = SmallMap::with_capacity(16);
        m.insert("only".into(), 1.0);
        m.shrink_to_fit();
        assert_eq!((m.len(), m.capacity()), (1, 1));
    }

    #[test]
    fn serializes_byte_for_byte_as_a_btreemap() {
        let names = [("quality", 0.5), ("correct", 1.0), ("latency", 1234.0)];
        let small: SmallMap<String, f64> = names.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let btree: BTreeMap<String, f64> = names.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let json = serde_json::to_string(&small).unwrap();
        assert_eq!(json, serde_json::to_string(&btree).unwrap());
        assert_eq!(
            serde_json::to_string_pretty(&small).unwrap(),
            serde_json::to_string_pretty(&btree).unwrap()
        );
        assert_eq!(
            serde_json::from_str::<SmallMap<String, f64>>(&json).unwrap(),
            small
        );

        let ks: SmallMap<u32, f64> = [(10, 0.9), (1, 0.25), (3, 0.5)].into();
        let kb: BTreeMap<u32, f64> = [(10, 0.9), (1, 0.25), (3, 0.5)].into();
        let json = serde_json::to_string(&ks).unwrap();
        assert_eq!(json, r#"{"1":0.25,"3":0.5,"10":0.9}"#);
        assert_eq!(json, serde_json::to_string(&kb).unwrap());
        assert_eq!(
            serde_json::from_str::<SmallMap<u32, f64>>(&json).unwrap(),
            ks
        );

        let empty: SmallMap<u32, f64> = SmallMap::new();
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
        assert_eq!(
            serde_json::to_value(&ks).unwrap(),
            serde_json::to_value(&kb).unwrap()
        );
    }

    #[test]
    fn deserializes_any_order_and_lets_the_last_duplicate_win() {
        let json = r#"{"3":0.3,"1":0.1,"2":0.2,"1":0.15}"#;
        let small: SmallMap<u32, f64> = serde_json::from_str(json).unwrap();
        let btree: BTreeMap<u32, f64> = serde_json::from_str(json).unwrap();
        assert!(small.iter().eq(btree.iter()));
        assert_eq!(small.len(), 3);
        assert_eq!(small[&1], 0.15);
        assert!(serde_json::from_str::<SmallMap<u32, f64>>("[1]").is_err());
        assert!(serde_json::from_str::<SmallMap<u32, f64>>(r#"{"x":1}"#).is_err());
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_small_map_keeps_its_keys_in_order_like_a_btreemap() {
        use crate::eval::SmallMap;
        let mut scores: SmallMap<String, f64> = SmallMap::new();
        scores.insert("relevance".to_string(), 0.5);
        scores.insert("correct".to_string(), 1.0);
        assert_eq!(scores.insert("relevance".to_string(), 0.75), Some(0.5));
        assert_eq!(scores.get("relevance"), Some(&0.75));
        assert_eq!(scores.keys().collect::<Vec<_>>(), ["correct", "relevance"]);
        assert_eq!(
            serde_json::to_string(&scores).unwrap(),
            r#"{"correct":1.0,"relevance":0.75}"#
        );
        let pass_at_k: SmallMap<u32, f64> = [(3, 0.9), (1, 0.5)].into_iter().collect();
        assert_eq!(pass_at_k[&1], 0.5);
        assert_eq!(format!("{pass_at_k:?}"), "{1: 0.5, 3: 0.9}");
    }
}
