//! Values of expressions: arithmetic with InfluxDB's types (integer op integer stays an
//! integer, except `/`, which is a float), math functions, and missing values (`null`)
//! propagating.

use strata_influxql::{BinaryOp, Expr};

use super::super::result::Value;

/// Evaluates `expr`, reading variables and aggregate calls through `lookup`.
pub(super) fn eval(expr: &Expr, lookup: &dyn Fn(&Expr) -> Option<Value>) -> Value {
    if let Some(value) = lookup(expr) {
        return value;
    }
    match expr {
        Expr::Integer(v) => Value::Integer(*v),
        Expr::Float(v) => Value::Float(*v),
        Expr::String(s) => Value::text(s.as_str()),
        Expr::Boolean(b) => Value::Boolean(*b),
        Expr::Duration(d) => Value::Integer(*d),
        Expr::Paren(inner) => eval(inner, lookup),
        Expr::Binary { op, lhs, rhs } => binary(*op, &eval(lhs, lookup), &eval(rhs, lookup)),
        Expr::Call { name, args } => {
            let values: Vec<Value> = args.iter().map(|a| eval(a, lookup)).collect();
            math(name, &values)
        }
        _ => Value::Null,
    }
}

fn binary(op: BinaryOp, l: &Value, r: &Value) -> Value {
    use Value::{Float, Integer};
    match (l, r) {
        (Integer(a), Integer(b)) => match op {
            BinaryOp::Add => Integer(a.wrapping_add(*b)),
            BinaryOp::Sub => Integer(a.wrapping_sub(*b)),
            BinaryOp::Mul => Integer(a.wrapping_mul(*b)),
            BinaryOp::Div if *b == 0 => Float(0.0),
            BinaryOp::Div => Float(*a as f64 / *b as f64),
            BinaryOp::Mod if *b == 0 => Value::Null,
            BinaryOp::Mod => Integer(a.wrapping_rem(*b)),
            BinaryOp::BitAnd => Integer(a & b),
            BinaryOp::BitOr => Integer(a | b),
            BinaryOp::BitXor => Integer(a ^ b),
            _ => Value::Null,
        },
        (Value::Boolean(a), Value::Boolean(b)) => match op {
            BinaryOp::BitAnd => Value::Boolean(a & b),
            BinaryOp::BitOr => Value::Boolean(a | b),
            BinaryOp::BitXor => Value::Boolean(a ^ b),
            _ => Value::Null,
        },
        _ => match (l.as_f64(), r.as_f64()) {
            (Some(a), Some(b)) => match op {
                BinaryOp::Add => Float(a + b),
                BinaryOp::Sub => Float(a - b),
                BinaryOp::Mul => Float(a * b),
                BinaryOp::Div if b == 0.0 => Float(0.0),
                BinaryOp::Div => Float(a / b),
                BinaryOp::Mod => Float(a % b),
                _ => Value::Null,
            },
            _ => Value::Null,
        },
    }
}

/// The math functions; `null` for a missing argument or a non-number.
fn math(name: &str, args: &[Value]) -> Value {
    let arg = |i: usize| args.get(i).and_then(Value::as_f64);
    let Some(x) = arg(0) else {
        return Value::Null;
    };
    let result = match name {
        "abs" => {
            if let Some(Value::Integer(v)) = args.first() {
                return Value::Integer(v.wrapping_abs());
            }
            x.abs()
        }
        "round" | "ceil" | "floor" => {
            if let Some(Value::Integer(v)) = args.first() {
                return Value::Integer(*v);
            }
            match name {
                // Go's math.Round: half away from zero, as Rust's round.
                "round" => x.round(),
                "ceil" => x.ceil(),
                _ => x.floor(),
            }
        }
        "acos" => x.acos(),
        "asin" => x.asin(),
        "atan" => x.atan(),
        "atan2" => match arg(1) {
            Some(y) => x.atan2(y),
            None => return Value::Null,
        },
        "cos" => x.cos(),
        "sin" => x.sin(),
        "tan" => x.tan(),
        "exp" => x.exp(),
        "ln" => x.ln(),
        "log" => match arg(1) {
            Some(base) => x.ln() / base.ln(),
            None => return Value::Null,
        },
        "log2" => x.log2(),
        "log10" => x.log10(),
        "pow" => match arg(1) {
            Some(y) => x.powf(y),
            None => return Value::Null,
        },
        "sqrt" => x.sqrt(),
        _ => return Value::Null,
    };
    // NaN stays a value (the row is kept); the answer writes it as null, as InfluxDB does.
    Value::Float(result)
}
