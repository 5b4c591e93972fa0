//! Checks InfluxDB makes while parsing that Strata's parser leaves to later: every regex
//! must compile, or the whole query is refused with HTTP 400 as a parse error.

use strata_influxql::{
    Dimension, Expr, MeasurementName, MeasurementRef, Query, SelectStatement, ShowFrom, Source,
    Statement, TagKeyFilter,
};

use super::select::Regex;

/// The first regex of `query` that does not compile, as InfluxDB words it.
pub(crate) fn regexes(query: &Query) -> Result<(), String> {
    query.statements.iter().try_for_each(statement)
}

fn statement(statement: &Statement) -> Result<(), String> {
    match statement {
        Statement::Select(select) => select_statement(select),
        Statement::ShowMeasurements(show) => {
            if let Some(MeasurementName::Regex(re)) = &show.with {
                compile(re)?;
            }
            show.condition.as_ref().map_or(Ok(()), expr)
        }
        Statement::ShowTagKeys(show)
        | Statement::ShowFieldKeys(show)
        | Statement::ShowSeries(show) => show_from(show),
        Statement::ShowTagValues(show) => {
            key_filter(&show.key)?;
            show_from(&show.from)
        }
        Statement::ShowCardinality(show) => {
            if let Some(key) = &show.key {
                key_filter(key)?;
            }
            show_from(&show.from)
        }
        Statement::Delete(spec) | Statement::DropSeries(spec) => {
            spec.sources.iter().try_for_each(measurement)?;
            spec.condition.as_ref().map_or(Ok(()), expr)
        }
        _ => Ok(()),
    }
}

fn select_statement(select: &SelectStatement) -> Result<(), String> {
    for field in &select.fields {
        expr(&field.expr)?;
    }
    for source in &select.sources {
        match source {
            Source::Measurement(m) => measurement(m)?,
            Source::Subquery(inner) => select_statement(inner)?,
        }
    }
    for dimension in &select.dimensions {
        if let Dimension::Regex(re) = dimension {
            compile(re)?;
        }
    }
    select.condition.as_ref().map_or(Ok(()), expr)
}

fn show_from(show: &ShowFrom) -> Result<(), String> {
    show.sources.iter().try_for_each(measurement)?;
    show.condition.as_ref().map_or(Ok(()), expr)
}

fn key_filter(filter: &TagKeyFilter) -> Result<(), String> {
    match filter {
        TagKeyFilter::Regex(re) | TagKeyFilter::NotRegex(re) => compile(re),
        _ => Ok(()),
    }
}

fn measurement(m: &MeasurementRef) -> Result<(), String> {
    match &m.name {
        MeasurementName::Regex(re) => compile(re),
        MeasurementName::Name(_) => Ok(()),
    }
}

fn expr(e: &Expr) -> Result<(), String> {
    match e {
        Expr::Regex(re) => compile(re),
        Expr::Call { args, .. } => args.iter().try_for_each(expr),
        Expr::Binary { lhs, rhs, .. } => {
            expr(lhs)?;
            expr(rhs)
        }
        Expr::Paren(inner) => expr(inner),
        _ => Ok(()),
    }
}

fn compile(pattern: &str) -> Result<(), String> {
    Regex::new(pattern).map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn check(text: &str) -> Result<(), String> {
        regexes(&strata_influxql::parse_query(text, &HashMap::new()).map_err(|e| e.to_string())?)
    }

    #[test]
    fn every_place_a_regex_stands_is_checked() {
        assert!(check("SELECT * FROM cpu WHERE host =~ /a|b/").is_ok());
        for bad in [
            "SELECT * FROM cpu WHERE host =~ /[/",
            "SELECT /(/ FROM cpu",
            "SELECT mean(x) FROM /[/",
            "SELECT mean(x) FROM cpu GROUP BY /[/",
            "SHOW MEASUREMENTS WITH MEASUREMENT =~ /[/",
            "SHOW TAG VALUES WITH KEY =~ /[/",
            "SHOW SERIES WHERE host !~ /[/",
            "SELECT max(m) FROM (SELECT x AS m FROM cpu WHERE h =~ /[/)",
        ] {
            let err = check(bad).expect_err(bad);
            assert!(err.starts_with("error parsing regexp: "), "{bad}: {err}");
        }
    }
}
