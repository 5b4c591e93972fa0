//! Bytes per point and speed of part files on TSBS-like data: integer random walks clamped to
//! [0, 100] with N(0, 1) steps truncated to integers, 10 fields, a row every 10 s.
//!
//! `cargo run --release -p strata-storage --example part_size [series] [rows]`
//! (defaults: 4,000 series × 1,080 rows = 3 hours of TSBS cpu-only at scale 4,000).

use std::time::Instant;

use strata_storage::column::{Column, SeriesData, Values};
use strata_storage::part::{PartReader, PartWriter};

/// Fields per row, as in TSBS cpu-only.
const FIELDS: u32 = 10;
/// Row interval: TSBS's default 10 s.
const INTERVAL_NS: i64 = 10_000_000_000;
/// 2016-01-01T00:00:00Z, TSBS's default start.
const START_NS: i64 = 1_451_606_400_000_000_000;

/// splitmix64, seeded: the same data on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// N(0, 1) by Box-Muller.
    fn normal(&mut self) -> f64 {
        (-2.0 * self.unit().ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

fn series(rng: &mut Rng, rows: usize) -> SeriesData {
    let times = (0..rows as i64)
        .map(|i| START_NS + i * INTERVAL_NS)
        .collect();
    let columns = (0..FIELDS)
        .map(|field| {
            let mut v = (rng.next() % 101) as i64;
            let values = (0..rows)
                .map(|_| {
                    v = (v + rng.normal() as i64).clamp(0, 100);
                    v
                })
                .collect();
            Column {
                field,
                values: Values::Integer(values),
                present: None,
            }
        })
        .collect();
    SeriesData { times, columns }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let series_count = args.next().transpose()?.unwrap_or(4_000);
    let rows = args.next().transpose()?.unwrap_or(1_080);
    let mut rng = Rng(42);
    let data: Vec<SeriesData> = (0..series_count).map(|_| series(&mut rng, rows)).collect();
    let dir = tempfile::TempDir::new()?;
    let path = dir.path().join("part");

    let started = Instant::now();
    let mut writer = PartWriter::create(&path)?;
    for (id, d) in data.iter().enumerate() {
        writer.write_series(u32::try_from(id)?, 0, d)?;
    }
    let summary = writer.finish()?;
    let write_s = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let reader = PartReader::open(&path)?;
    let open_s = started.elapsed().as_secs_f64();
    let (mut time_bytes, mut value_bytes, mut chunks) = (0u64, 0u64, 0usize);
    for (id, _) in reader.series_ids() {
        for chunk in reader.chunks(id)? {
            chunks += 1;
            time_bytes += chunk.time_block.map_or(0, |b| b.len());
            for c in &chunk.columns {
                value_bytes += c.values.len() + c.presence.map_or(0, |p| p.len());
            }
        }
    }
    let started = Instant::now();
    let mut read_points = 0u64;
    for (id, d) in data.iter().enumerate() {
        let got = reader
            .read_series(u32::try_from(id)?, i64::MIN, i64::MAX, None)?
            .ok_or("series missing")?;
        if &got != d {
            return Err(format!("series {id} reads back different").into());
        }
        read_points += got
            .columns
            .iter()
            .map(|c| c.values.len() as u64)
            .sum::<u64>();
    }
    let read_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for id in 0..series_count {
        reader.read_series(u32::try_from(id)?, i64::MIN, i64::MAX, Some(&[3]))?;
    }
    let read_one_s = started.elapsed().as_secs_f64();

    let points = summary.points as f64;
    let index_bytes = summary.file_bytes - time_bytes - value_bytes - 16 - 72;
    println!(
        "{series_count} series x {rows} rows x {FIELDS} integer fields = {} points, {chunks} chunks",
        summary.points
    );
    println!(
        "file              {:>12} bytes  {:.4} bytes/point",
        summary.file_bytes,
        summary.file_bytes as f64 / points
    );
    println!(
        "  values          {value_bytes:>12} bytes  {:.4} bytes/point",
        value_bytes as f64 / points
    );
    println!(
        "  timestamps      {time_bytes:>12} bytes  {:.4} bytes/point",
        time_bytes as f64 / points
    );
    println!(
        "  index (zstd)    {index_bytes:>12} bytes  {:.4} bytes/point",
        index_bytes as f64 / points
    );
    // Footer bytes 16..24: the index's raw (uncompressed) length, to show what zstd saves.
    let file = std::fs::read(&path)?;
    let footer = &file[file.len() - 72..];
    let raw_index = u64::from_le_bytes(footer[16..24].try_into()?);
    println!(
        "  index (raw)     {raw_index:>12} bytes  {:.4} bytes/point",
        raw_index as f64 / points
    );
    println!("  header+footer   {:>12} bytes", 16 + 72);
    println!(
        "write (incl. fsync)  {:>8.1} M points/s  ({write_s:.3} s)",
        points / write_s / 1e6
    );
    println!("open (check index)   {:>8.3} ms", open_s * 1e3);
    println!(
        "read all fields      {:>8.1} M points/s  ({read_s:.3} s)",
        read_points as f64 / read_s / 1e6
    );
    println!(
        "read 1 field         {:>8.1} M points/s  ({read_one_s:.3} s)",
        points / f64::from(FIELDS) / read_one_s / 1e6
    );
    Ok(())
}
