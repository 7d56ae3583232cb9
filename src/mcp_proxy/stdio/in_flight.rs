//! The stdio relay's table of calls in flight: bounded in size and in age, so a server that never answers
//! some ids holds neither memory nor stale entries beyond the bounds. A call taken out of the table (answered,
//! cancelled) leaves nothing behind: its place in the age order goes with it.

use std::{
    collections::{BTreeMap, HashMap},
    time::{Duration, Instant},
};

/// When an entry was last touched; `seq` orders touches at the same instant and makes each one unique.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Touch {
    at: Instant,
    seq: u64,
}

/// The calls in flight, by id key: at most `cap` of them (beyond it the oldest is given back), and each
/// given back by [`InFlight::expire`] once untouched for `ttl`. Inserting an entry again touches it.
pub(super) struct InFlight<V> {
    entries: HashMap<String, (Touch, V)>,
    /// Every entry's key by its last touch, oldest first: exactly one record per entry.
    order: BTreeMap<Touch, String>,
    next_seq: u64,
    cap: usize,
    ttl: Duration,
}

impl<V> InFlight<V> {
    pub(super) fn new(cap: usize, ttl: Duration) -> Self {
        Self {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            next_seq: 0,
            cap,
            ttl,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.entries.iter().map(|(k, (_, v))| (k, v))
    }

    /// Inserts (or touches) `key` at `now`; returns the oldest entry when it had to go to make room.
    pub(super) fn insert(&mut self, key: String, value: V, now: Instant) -> Option<(String, V)> {
        let evicted = if self.entries.len() >= self.cap && !self.entries.contains_key(&key) {
            self.pop_oldest()
        } else {
            None
        };
        let touch = Touch {
            at: now,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        self.order.insert(touch, key.clone());
        if let Some((old, _)) = self.entries.insert(key, (touch, value)) {
            self.order.remove(&old);
        }
        evicted
    }

    /// Takes `key` out with its place in the age order.
    pub(super) fn remove(&mut self, key: &str) -> Option<V> {
        let (touch, value) = self.entries.remove(key)?;
        self.order.remove(&touch);
        Some(value)
    }

    pub(super) fn drain(&mut self) -> Vec<(String, V)> {
        self.order.clear();
        self.entries.drain().map(|(k, (_, v))| (k, v)).collect()
    }

    fn pop_oldest(&mut self) -> Option<(String, V)> {
        let (_, key) = self.order.pop_first()?;
        let (_, value) = self.entries.remove(&key)?;
        Some((key, value))
    }

    /// Gives back the entries untouched for `ttl` at `now`, oldest first; an entry `busy` holds (a wait of
    /// its own in progress, bounded by its own timer) is touched instead.
    pub(super) fn expire(&mut self, now: Instant, busy: impl Fn(&V) -> bool) -> Vec<(String, V)> {
        let mut expired = Vec::new();
        let mut touched = Vec::new();
        while let Some(entry) = self.order.first_entry() {
            if now.saturating_duration_since(entry.key().at) < self.ttl {
                break;
            }
            let key = entry.remove();
            match self.entries.remove(&key) {
                Some((_, value)) if busy(&value) => touched.push((key, value)),
                Some((_, value)) => expired.push((key, value)),
                None => {}
            }
        }
        for (key, value) in touched {
            self.insert(key, value, now);
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_calls_expire_after_the_ttl_unless_busy() {
        let ttl = Duration::from_secs(600);
        let mut table: InFlight<bool> = InFlight::new(8, ttl);
        let t0 = Instant::now();
        table.insert("1".into(), false, t0);
        table.insert("2".into(), true, t0); // an injected wait in progress
        table.insert("3".into(), false, t0 + Duration::from_secs(300));
        assert!(
            table
                .expire(t0 + ttl - Duration::from_millis(1), |b| *b)
                .is_empty()
        );
        let gone = table.expire(t0 + ttl, |b| *b);
        assert_eq!(
            gone.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["1"]
        );
        // "2" was touched at t0 + ttl; "3" goes at its own ttl, and touching it again restarts it.
        table.insert("3".into(), false, t0 + Duration::from_secs(800));
        assert!(
            table
                .expire(t0 + Duration::from_secs(1000), |b| *b)
                .is_empty()
        );
        let gone = table.expire(t0 + Duration::from_secs(1400), |_| false);
        let mut keys: Vec<&str> = gone.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort();
        assert_eq!(keys, ["2", "3"]);
        assert!(table.is_empty());
        assert!(table.order.is_empty(), "no stale records left behind");
    }

    #[test]
    fn in_flight_calls_are_capped_oldest_first_and_memory_stays_bounded() {
        let mut table: InFlight<u32> = InFlight::new(4, Duration::from_secs(600));
        let t0 = Instant::now();
        for i in 0..4u32 {
            assert!(table.insert(i.to_string(), i, t0).is_none());
        }
        // Touching "0" makes "1" the oldest.
        table.insert("0".into(), 0, t0 + Duration::from_secs(1));
        let evicted = table.insert("4".into(), 4, t0 + Duration::from_secs(2));
        assert_eq!(evicted, Some(("1".to_string(), 1)));
        // A server that never answers: many calls, each touched often, the table stays at the cap.
        for i in 0..10_000u32 {
            let key = (i % 7).to_string();
            table.insert(key.clone(), i, t0 + Duration::from_secs(3));
            table.remove(&key);
            table.insert(key, i, t0 + Duration::from_secs(3));
        }
        assert!(table.entries.len() <= 4 && table.order.len() == table.entries.len());
    }

    #[test]
    fn an_answered_call_leaves_nothing_behind() {
        let mut table: InFlight<u32> = InFlight::new(65_536, Duration::from_secs(600));
        let t0 = Instant::now();
        for i in 0..10_000u32 {
            let key = i.to_string();
            table.insert(key.clone(), i, t0);
            // A held request or answer touches its call again before the answer comes.
            if i % 3 == 0 {
                table.insert(key.clone(), i, t0 + Duration::from_millis(1));
            }
            assert_eq!(table.remove(&key), Some(i));
        }
        assert!(table.is_empty());
        assert!(table.order.is_empty(), "no ordering record left behind");
        // Nothing left to expire either.
        assert!(
            table
                .expire(t0 + Duration::from_secs(3600), |_| false)
                .is_empty()
        );
    }
}
