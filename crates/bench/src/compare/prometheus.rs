//! Checking a Prometheus `query_range`/`query` answer and counting its rows.

/// Rows of a Prometheus `query_range`/`query` answer (the values of every series of a
/// matrix, the series of a vector); an answer whose `status` is not `success` is the error.
pub fn prometheus_rows(body: &[u8]) -> Result<u64, String> {
    let answer: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("the JSON answer does not parse: {e}"))?;
    let status = answer.get("status").and_then(serde_json::Value::as_str);
    if status != Some("success") {
        let field = |key: &str| {
            answer
                .get(key)
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        return Err(format!(
            "status {:?}: {} {}",
            status.unwrap_or("missing"),
            field("errorType"),
            field("error")
        ));
    }
    let result = answer
        .pointer("/data/result")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| "the answer has no data.result".to_string())?;
    Ok(result
        .iter()
        .map(|series| match series.get("values") {
            Some(serde_json::Value::Array(values)) => values.len() as u64,
            _ => 1,
        })
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_answers_are_checked() {
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"cpu_usage_user"},"values":[[1,"1"],[2,"3"]]},
            {"metric":{"__name__":"cpu_usage_system"},"values":[[1,"2"]]}]}}"#;
        assert_eq!(prometheus_rows(matrix), Ok(3));
        let vector = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{},"value":[1,"1"]}]}}"#;
        assert_eq!(prometheus_rows(vector), Ok(1));
        let empty = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert_eq!(prometheus_rows(empty), Ok(0));
        let error = br#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
        let message = prometheus_rows(error).unwrap_err();
        assert!(message.contains("bad_data parse error"), "{message}");
        assert!(prometheus_rows(br#"{"status":"success"}"#).is_err());
        assert!(prometheus_rows(b"<html>").is_err());
    }
}
